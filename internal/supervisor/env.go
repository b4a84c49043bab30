package supervisor

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"
)

// env is how the supervisor touches the world outside its own memory:
// processes, sockets, randomness. Tests replace it with fakes (the seam
// cloudflare/tableflip calls env), so that every supervision rule runs under
// testing/synctest without real processes.
type env struct {
	// start starts a process. The supervisor calls it on its spawner's
	// locked OS thread (see spawner).
	start func(spec procSpec) (process, error)
	// dial reports whether a connection to e can be opened.
	dial func(ctx context.Context, e Endpoint) error
	// get sends GET path to e and returns the status code once the whole
	// body has been read.
	get func(ctx context.Context, e Endpoint, path string, header http.Header) (int, error)
	// freePort returns a TCP port on 127.0.0.1 that nothing listens on.
	freePort func() (int, error)
	// rand returns a number in [0, 1).
	rand func() float64
	// executable reports whether c's program can be started
	// (Command.Executable).
	executable func(c Command) error
	// listening returns the TCP addresses the processes of the process
	// group pgid listen on; nil when none, or when it cannot be known.
	listening func(pgid int) []string
}

// procSpec is everything start needs to know.
type procSpec struct {
	Path   string
	Args   []string // including Args[0]
	Env    []string
	Dir    string
	Stdout io.Writer // receives whole lines, each ending in "\n"
	Stderr io.Writer
	// Guard, when set, is the program started in Path's place, with Args
	// after it, as the process group's guard (see GuardMain), and Lifeline
	// the read end of the pipe it watches.
	Guard    string
	Lifeline *os.File
}

// process is a started worker process.
type process interface {
	// Pid is the operating system's process ID.
	Pid() int
	// Signal sends sig to the process's whole process group. After the
	// process has exited it does nothing and returns an error.
	Signal(sig syscall.Signal) error
	// Wait blocks until the process has exited and been reaped, and returns
	// how it ended. It is called exactly once.
	Wait() error
}

// probeTimeout bounds one readiness or health check.
const probeTimeout = 2 * time.Second

func realEnv() env {
	return env{
		start:      startProcess,
		dial:       dialEndpoint,
		get:        getEndpoint,
		freePort:   freePort,
		rand:       rand.Float64,
		executable: Command.Executable,
		listening:  listeningAddrs,
	}
}

func dialEndpoint(ctx context.Context, e Endpoint) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, e.Network, e.Addr)
	if err != nil {
		return err
	}
	return c.Close()
}

func getEndpoint(ctx context.Context, e Endpoint, path string, header http.Header) (int, error) {
	// One transport per request, without keep-alive: probes are rare, and an
	// idle connection must not outlive the check or the worker.
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, e.Network, e.Addr)
		},
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	host := e.Addr
	if e.Network != "tcp" {
		host = "localhost"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+path, nil)
	if err != nil {
		return 0, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "sluice-supervisor")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Read the whole answer: a warm-up request is only useful if the
	// worker rendered all of it.
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<20)); err != nil {
		return resp.StatusCode, err
	}
	return resp.StatusCode, nil
}

func freePort() (int, error) {
	// The port is free when we close the listener; the worker binds it a
	// moment later. Another process could take it in between; the worker
	// then fails to bind, exits and is restarted on another port.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// check runs one readiness or health check against e, within timeout: a
// GET of path that must answer 2xx, or a connection when path is empty.
func (en env) check(ctx context.Context, e Endpoint, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if path == "" {
		return en.dial(ctx, e)
	}
	code, err := en.get(ctx, e, path, nil)
	if err != nil {
		return err
	}
	if code < 200 || code > 299 {
		return &statusError{path: path, code: code}
	}
	return nil
}

// statusError is a readiness or health check answered, but not with 2xx:
// the process listens where it was told.
type statusError struct {
	path string
	code int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("GET %s answered %d %s", e.path, e.code, strings.ToLower(http.StatusText(e.code)))
}
