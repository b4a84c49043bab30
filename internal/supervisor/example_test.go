package supervisor_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/supervisor"
)

// printBalancer prints the calls it receives and signals each Add.
type printBalancer struct{ added chan supervisor.Endpoint }

func (b printBalancer) Add(e supervisor.Endpoint) {
	fmt.Println("add", e.ID)
	b.added <- e
}

func (b printBalancer) Drain(ctx context.Context, id int) error {
	fmt.Println("drain", id)
	return nil
}

func (b printBalancer) Remove(id int) { fmt.Println("remove", id) }

func ExampleSupervisor() {
	bal := printBalancer{added: make(chan supervisor.Endpoint, 1)}
	sup, err := supervisor.New(bal, supervisor.Options{
		// In production, say []string{"node", "server.js"}; here the
		// worker is this test binary, which serves HTTP on $PORT.
		Command:        []string{os.Args[0]},
		Env:            workerEnv(),
		Count:          1,
		ReadyPath:      "/ready",
		WarmupRequests: 2,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()

	e := <-bal.added
	// The worker is ready once Add has returned, a moment after it was
	// called.
	for deadline := time.Now().Add(10 * time.Second); !sup.Ready() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("ready:", sup.Ready(), "on", e.Network)

	shutdownCtx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	if err := sup.Shutdown(shutdownCtx); err != nil {
		fmt.Println(err)
	}
	fmt.Println("ready:", sup.Ready())
	cancel()
	fmt.Println("run:", <-done)
	// Output:
	// add 1
	// ready: true on tcp
	// drain 1
	// remove 1
	// ready: false
	// run: <nil>
}

func ExampleStatic() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()

	bal := printBalancer{added: make(chan supervisor.Endpoint, 1)}
	st, err := supervisor.NewStatic(bal, supervisor.StaticOptions{
		Upstreams:  []supervisor.Endpoint{{Addr: strings.TrimPrefix(srv.URL, "http://"), Concurrency: 64}},
		HealthPath: "/healthz",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()

	e := <-bal.added
	fmt.Println("ready:", st.Ready(), "concurrency", e.Concurrency)
	if err := st.Shutdown(context.Background()); err != nil {
		fmt.Println(err)
	}
	cancel()
	fmt.Println("run:", <-done)
	// Output:
	// add 1
	// ready: true concurrency 64
	// drain 1
	// remove 1
	// run: <nil>
}

func ExampleOptions_Validate() {
	err := supervisor.Options{Count: -1, ReadyPath: "ready"}.Validate()
	fmt.Println(err)
	// Output:
	// supervisor: Command is empty: the worker's program is required
	// supervisor: Count is -1: must be >= 0 (0 means one per CPU)
	// supervisor: ReadyPath is "ready": must start with /
}
