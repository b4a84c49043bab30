package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Main's Extensions reach serve: WrapFront wraps the front of the running
// command. Run in-process: the SIGTERM that ends it is this process's,
// taken by serve's signal handling.
func TestServeWrapFront(t *testing.T) {
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf("server: {listen: %q, drainDelay: 0s}\nadmin: {listen: \"off\"}\n", addr))
	var seen atomic.Int64
	ext := Extensions{WrapFront: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.Add(1)
			w.Header().Set("X-Wrapped", "1")
			h.ServeHTTP(w, r)
		})
	}}
	code := make(chan int, 1)
	go func() {
		code <- dispatch(context.Background(), ext, []string{"serve", "-c", cfg}, io.Discard, io.Discard)
	}()
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/?cpu=0")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Wrapped") != "1" || seen.Load() != 1 {
		t.Errorf("got %d, X-Wrapped %q, %d requests seen by WrapFront; want 200 through it, once", resp.StatusCode, resp.Header.Get("X-Wrapped"), seen.Load())
	}
	syscall.Kill(syscall.Getpid(), syscall.SIGTERM) // serve is listening for it: it is serving
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit code after the drain: got %d, want 0", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve still running 10s after SIGTERM")
	}
}
