package loadgen

import (
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
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

// slowBody ignores cancellation, as some bodies do: only a check of the
// clock after the read can tell that the answer came too late.
type slowBody struct{ d time.Duration }

func (b *slowBody) Read([]byte) (int, error) { time.Sleep(b.d); return 0, io.EOF }
func (b *slowBody) Close() error             { return nil }

func TestAttemptPastDeadlineIsATimeout(t *testing.T) {
	tests := []struct {
		name   string
		read   time.Duration
		wantOK bool
	}{
		{"within patience", 900 * time.Millisecond, true},
		{"past patience", 1100 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
					return &http.Response{StatusCode: 200, Body: &slowBody{tt.read}}, nil
				})
				cfg := Config{URL: "http://127.0.0.1:1/", Phases: []Phase{{Rate: 1, Duration: time.Second}}, Transport: rt}
				g, err := newGenerator(cfg.withDefaults())
				if err != nil {
					t.Fatal(err)
				}
				res := g.do(t.Context(), time.Now(), spec{url: g.urls[0]})
				if res.ok != tt.wantOK {
					t.Errorf("ok = %v (failed %v), want %v", res.ok, res.failed, tt.wantOK)
				}
				if !tt.wantOK && (len(res.failed) != 1 || res.failed[0] != KindTimeout) {
					t.Errorf("failed attempts %v, want [%s]", res.failed, KindTimeout)
				}
			})
		})
	}
}

// LoopbackOnly is checked on the resolved address, so a name that resolves
// elsewhere is refused too; Control runs before connect, so nothing is sent.
func TestLoopbackOnlyDialer(t *testing.T) {
	tr := newTransport(Config{LoopbackOnly: true, Timeout: time.Second})
	for _, addr := range []string{"192.0.2.1:80", "[2001:db8::1]:80"} {
		_, err := tr.DialContext(t.Context(), "tcp", addr)
		if !errors.Is(err, ErrNotLoopback) {
			t.Errorf("dial %s: error %v, want ErrNotLoopback", addr, err)
		}
	}
}

// The load asks for identity responses unless told otherwise, so that a
// front that compresses and one that does not send the same bytes.
func TestNoImplicitCompression(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Accept-Encoding")
	}))
	defer srv.Close()
	resp, err := (&http.Client{Transport: newTransport(Config{Timeout: time.Second})}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ae := <-got; ae != "" {
		t.Errorf("request carried Accept-Encoding %q, want none", ae)
	}
}

func TestProgressLine(t *testing.T) {
	var w tally
	for i := range 100 {
		w.add(&result{ok: true, attempts: 1, latency: time.Duration(i+1) * time.Millisecond})
	}
	w.add(&result{attempts: 2, failed: []string{"503:codel", KindTimeout}})
	w.add(&result{dropped: true})
	got := progressLine(2500*time.Millisecond, 500*time.Millisecond, &w, 110, 7)
	want := "   2.5s  offered 220.0/s  goodput 200.0/s  errors 6.0/s  p99 99.3ms  in flight 7" // 99 ms within the histogram's 1/64
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestProgressWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder // written by Run's progress goroutine, read after Run returns
		rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(""))}, nil
		})
		_, err := Run(t.Context(), Config{
			URL:              "http://127.0.0.1:1/",
			Phases:           []Phase{{Rate: 100, Duration: time.Second}},
			Transport:        rt,
			Progress:         &out,
			ProgressInterval: 300 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if n := strings.Count(got, "offered "); n != 3 {
			t.Errorf("got %d status lines, want 3 (at 0.3, 0.6 and 0.9 s):\n%q", n, got)
		}
		if !strings.HasPrefix(got, "\r   0.3s  offered ") {
			t.Errorf("output starts %q, want a status line rewritten in place", got[:min(len(got), 30)])
		}
		if !strings.HasSuffix(got, " \r") {
			t.Errorf("output ends %q, want the line blanked out", got[max(0, len(got)-10):])
		}
	})
}

func BenchmarkRecorder(b *testing.B) {
	res := &result{at: 1500 * time.Millisecond, classes: []int{0, 3}, attempts: 1, ok: true, latency: 12 * time.Millisecond}
	failed := &result{at: 1500 * time.Millisecond, classes: []int{1, 2}, attempts: 1, failed: []string{"503:queue-full"}}
	b.Run("success", func(b *testing.B) {
		b.ReportAllocs()
		rec := newRecorder([]time.Duration{0, time.Hour}, 4, 250*time.Millisecond)
		for b.Loop() {
			rec.record(res)
		}
	})
	b.Run("shed", func(b *testing.B) {
		b.ReportAllocs()
		rec := newRecorder([]time.Duration{0, time.Hour}, 4, 250*time.Millisecond)
		for b.Loop() {
			rec.record(failed)
		}
	})
	b.Run("success-parallel", func(b *testing.B) {
		b.ReportAllocs()
		rec := newRecorder([]time.Duration{0, time.Hour}, 4, 250*time.Millisecond)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				rec.record(res)
			}
		})
	})
}

func BenchmarkDraw(b *testing.B) {
	cfg := Config{
		URL:    "http://127.0.0.1:1/",
		Phases: []Phase{{Rate: 1, Duration: time.Second}},
		HeaderMixes: []HeaderMix{
			{Name: "Sluice-Tenant", Values: []Weighted{{Value: "a", Weight: 9}, {Value: "b", Weight: 1}}},
		},
		QueryMix: []Weighted{{Value: "cpu=5", Weight: 9}, {Value: "cpu=50", Weight: 1}},
	}
	g, err := newGenerator(cfg.withDefaults())
	if err != nil {
		b.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		g.draw(rnd)
	}
}

// Delivered counts a success in the window its response ended in;
// Goodput in the window its request was sent in. A request a queue
// answers after the run's end counts in Goodput only.
func TestDeliveredByResponseEnd(t *testing.T) {
	s := time.Second
	rec := newRecorder([]time.Duration{0, s, 2 * s}, 0, 250*time.Millisecond)
	for _, r := range []result{
		{at: 500 * time.Millisecond, phase: 0, attempts: 1, ok: true, latency: 200 * time.Millisecond},  // sent 0, ends 0
		{at: 900 * time.Millisecond, phase: 0, attempts: 1, ok: true, latency: 300 * time.Millisecond},  // sent 0, ends 1
		{at: 1900 * time.Millisecond, phase: 1, attempts: 1, ok: true, latency: 500 * time.Millisecond}, // sent 1, ends after the run
		{at: 1200 * time.Millisecond, phase: 1, attempts: 1, failed: []string{"503"}},
	} {
		rec.record(&r)
	}
	for i, want := range []struct{ goodput, delivered float64 }{{2, 1}, {1, 1}} {
		st := rec.mu.phases[i].stats(s)
		if st.Goodput != want.goodput || st.Delivered != want.delivered {
			t.Errorf("phase %d: got goodput %v delivered %v per second, want %v and %v", i, st.Goodput, st.Delivered, want.goodput, want.delivered)
		}
	}
	if st := rec.mu.total.stats(2 * s); st.Goodput != 1.5 || st.Delivered != 1 {
		t.Errorf("run: got goodput %v delivered %v per second, want 1.5 and 1", st.Goodput, st.Delivered)
	}
}
