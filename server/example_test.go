package server_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/server"
)

// Wrapping an application's handler (here in a stand-in for admission
// control, such as admission.Controller.Wrap) and serving it until the
// context ends, then draining. The probes are answered before the wrapper.
func Example() {
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\n")
	})
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Wrapped", "yes")
			next.ServeHTTP(w, r)
		})
	}
	srv := &server.Server{
		Handler:    wrap(app),
		DrainDelay: 100 * time.Millisecond, // production: the 5 s default
		OnDrain:    func() { fmt.Println("draining") },
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	ctx, drain := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()

	for _, path := range []string{"/", server.DefaultReadyPath} {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s: %d %q wrapped=%v\n", path, resp.StatusCode, body, resp.Header.Get("X-Wrapped") == "yes")
	}
	drain()
	fmt.Println("Serve:", <-done)
	// Output:
	// /: 200 "hello\n" wrapped=true
	// /__sluice/ready: 200 "ready" wrapped=false
	// draining
	// Serve: <nil>
}

// A main function: SIGTERM or SIGINT drains, a second one cuts, and the exit
// code says whether the drain finished.
func ExampleSignals() {
	srv := &server.Server{Addr: ":8080", Handler: http.NotFoundHandler()}
	ctx, stop := server.Signals(context.Background(), srv.Cut)
	defer stop()
	if err := srv.Run(ctx); err != nil {
		log.Print(err) // errors.Is(err, server.ErrCut): the drain was cut
		stop()
		// os.Exit(1)
	}
}
