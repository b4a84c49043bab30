package loadgen

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A generator that falls behind its schedule (a starved scheduler, a
// descheduled goroutine) must charge the delay to latency and to the first
// attempt's patience, or it hides exactly the queueing it should show.
func TestDoCountsFromScheduledSend(t *testing.T) {
	tests := []struct {
		name        string
		late        time.Duration // how far behind schedule the send starts
		wantOK      bool
		wantLatency time.Duration
	}{
		{"on time", 0, true, 10 * time.Millisecond},
		{"late", 300 * time.Millisecond, true, 310 * time.Millisecond},
		{"later than the patience", 2 * time.Second, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
					select {
					case <-time.After(10 * time.Millisecond):
					case <-req.Context().Done():
						return nil, req.Context().Err()
					}
					return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(""))}, nil
				})
				cfg := Config{URL: "http://127.0.0.1:1/", Phases: []Phase{{Rate: 1, Duration: time.Second}}, Transport: rt}
				g, err := newGenerator(cfg.withDefaults())
				if err != nil {
					t.Fatal(err)
				}
				res := g.do(t.Context(), time.Now().Add(-tt.late), spec{url: g.urls[0]})
				if res.ok != tt.wantOK || res.latency != tt.wantLatency {
					t.Errorf("got ok %v latency %v, want ok %v latency %v", res.ok, res.latency, tt.wantOK, tt.wantLatency)
				}
				if !tt.wantOK && (len(res.failed) != 1 || res.failed[0] != KindTimeout) {
					t.Errorf("failed attempts %v, want [%s]", res.failed, KindTimeout)
				}
			})
		})
	}
}
