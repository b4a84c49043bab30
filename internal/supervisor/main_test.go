package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/supervisor"
)

// The test binary doubles as the processes the integration tests start,
// chosen by SLUICE_TEST_ROLE:
//
//   - worker: a tiny HTTP worker on $PORT or $SLUICE_SOCKET (see runWorker);
//   - sleep: does nothing until killed;
//   - supervisor: supervises one worker (see runSupervisorHelper).
//
// Every role exits on its own after roleLifetime, so that a failing test
// cannot leave processes behind for long.
const roleLifetime = 60 * time.Second

func TestMain(m *testing.M) {
	supervisor.GuardMain() // the test binary is the guard too (Options.Guard)
	switch os.Getenv("SLUICE_TEST_ROLE") {
	case "":
		os.Exit(m.Run())
	case "worker":
		os.Exit(runWorker())
	case "sleep":
		time.Sleep(roleLifetime)
		os.Exit(0)
	case "supervisor":
		os.Exit(runSupervisorHelper())
	default:
		fmt.Fprintln(os.Stderr, "unknown SLUICE_TEST_ROLE")
		os.Exit(2)
	}
}

// workerEnv returns the Options.Env that makes the test binary a worker,
// plus extra KEY=VALUE settings:
//
//   - SLUICE_TEST_IGNORE_TERM=1: ignore SIGTERM;
//   - SLUICE_TEST_CHILD=1: start a "sleep" child in its process group and
//     print "child PID" on stdout.
func workerEnv(extra ...string) []string {
	// A race-enabled binary sleeps 1 s before exiting unless told not to.
	return append([]string{"SLUICE_TEST_ROLE=worker", "GORACE=atexit_sleep_ms=0"}, extra...)
}

// runWorker serves:
//
//	/ready   200 "ready"
//	/        200 "worker ID", after ?ms= milliseconds of "rendering"
//
// It prints "hello from worker ID" on stdout and "worker ID says hi on
// stderr" on stderr, and on SIGTERM finishes its in-flight requests and
// exits 0.
func runWorker() int {
	id := os.Getenv("SLUICE_WORKER_ID")
	// Signals first: the supervisor may stop us as soon as we listen.
	term := make(chan os.Signal, 1)
	if os.Getenv("SLUICE_TEST_IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(term, syscall.SIGTERM)
	}
	var l net.Listener
	var err error
	if sock := os.Getenv("SLUICE_SOCKET"); sock != "" {
		l, err = net.Listen("unix", sock)
	} else {
		l, err = net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "listen:", err)
		return 1
	}
	if os.Getenv("SLUICE_TEST_CHILD") == "1" {
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), "SLUICE_TEST_ROLE=sleep", "GORACE=atexit_sleep_ms=0")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 1
		}
		fmt.Println("child", child.Process.Pid)
	}
	fmt.Println("hello from worker", id)
	fmt.Fprintln(os.Stderr, "worker", id, "says hi on stderr")

	mux := http.NewServeMux()
	mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ready")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if ms, _ := strconv.Atoi(r.URL.Query().Get("ms")); ms > 0 {
			time.Sleep(time.Duration(ms) * time.Millisecond) // the render
		}
		fmt.Fprint(w, "worker ", id)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case <-term:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			return 1
		}
		return 0
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "serve:", err)
		}
		return 1
	case <-time.After(roleLifetime):
		return 3
	}
}
