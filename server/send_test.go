package server_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/server"
)

// A client that stops reading is cut SendTimeout after the write it does
// not take; a stream that pauses longer than SendTimeout between writes,
// read by its client, is not.
func TestSendTimeout(t *testing.T) {
	const send = time.Second
	tests := []struct {
		name    string
		reads   bool
		wantErr bool
	}{
		{"stalled reader is cut", false, true},
		{"paused stream lives", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := testutil.NewListener()
				werr := make(chan error, 1)
				chunk := strings.Repeat("x", 32<<10)
				s := &server.Server{SendTimeout: send, DrainDelay: -1, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					rc := http.NewResponseController(w)
					for range 4 {
						if _, err := io.WriteString(w, chunk); err != nil {
							werr <- err
							return
						}
						if err := rc.Flush(); err != nil {
							werr <- err
							return
						}
						time.Sleep(3 * send) // a stream's pause, not synchronisation
					}
					werr <- nil
				})}
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- s.Serve(ctx, l) }()
				c, err := l.Dial(t.Context(), "", "")
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				go io.WriteString(c, "GET / HTTP/1.1\r\nHost: sluice\r\n\r\n")
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				if tt.reads {
					go io.Copy(io.Discard, resp.Body)
				}
				err = <-werr
				if got := err != nil; got != tt.wantErr {
					t.Fatalf("handler's write error: got %v, want error %v", err, tt.wantErr)
				}
				if tt.wantErr {
					// net.Pipe has no buffer: the first write blocks at once.
					if took := time.Since(start); took != send {
						t.Errorf("cut after %v, want %v", took, send)
					}
				}
				c.Close()
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Serve: got %v, want nil", err)
				}
			})
		})
	}
}
