package poison

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestShapes(t *testing.T) {
	tests := []struct {
		method, path string
		want         shapes
	}{
		{"GET", "/", shapes{fine: "GET /"}},
		{"GET", "", shapes{fine: "GET /"}},
		{"GET", "/boom", shapes{fine: "GET /boom"}},
		{"GET", "/BOOM/", shapes{fine: "GET /boom"}},
		{"GET", "//api/../boom", shapes{fine: "GET /boom"}},
		{"POST", "/users/42", shapes{fine: "POST /users/*"}},
		{"GET", "/users/42/avatar", shapes{fine: "GET /users/*/avatar", coarse: "GET /users/*"}},
		{"GET", "/a/b", shapes{fine: "GET /a/b", coarse: "GET /a/*"}},
		{"GET", "/a/b/c/d/e", shapes{fine: "GET /a/b/c/*", coarse: "GET /a/*"}},
		{"GET", "/x/" + strings.Repeat("a", 25), shapes{fine: "GET /x/*"}},
		{"GET", "/v2/items", shapes{fine: "GET /*/items", coarse: "GET /*/*"}},
		{strings.Repeat("M", 17), "/a", shapes{fine: "OTHER /a"}},
	}
	for _, tt := range tests {
		if got := shapesOf(tt.method, tt.path); got != tt.want {
			t.Errorf("shapesOf(%q, %q): got %+v, want %+v", tt.method, tt.path, got, tt.want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("zero Options: got %v, want valid", err)
	}
	err := Options{After: -1, Window: -1, Quarantine: 2 * time.Minute, MaxQuarantine: time.Minute, MaxShapes: -3}.Validate()
	if err == nil {
		t.Fatal("got nil, want errors")
	}
	for _, field := range []string{"Options.After", "Options.Window", "Options.MaxQuarantine", "Options.MaxShapes"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
	if _, err := New(Options{After: -1}); err == nil {
		t.Error("New accepted a negative After")
	}
}

func newTable(t *testing.T, o Options) *Table {
	t.Helper()
	tb, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// admits reports whether a GET of path is let through now, and reports
// it served at once when it is.
func admits(tb *Table, path string) bool {
	tk, ok := tb.Admit(time.Now(), "GET", path)
	if ok {
		tb.Done(time.Now(), tk, Served)
	}
	return ok
}

func died(tb *Table, paths ...string) {
	var reqs []Request
	for _, p := range paths {
		reqs = append(reqs, Request{Method: "GET", Path: p})
	}
	tb.Died(time.Now(), reqs)
}

// A shape in flight at After deaths within the window is refused; one
// death, or deaths further apart than the window, are not enough.
func TestQuarantineAfterDeaths(t *testing.T) {
	tests := []struct {
		name   string
		after  int
		deaths []time.Duration // gaps before each death
		want   bool            // quarantined
	}{
		{"one death of two", 2, []time.Duration{0}, false},
		{"two deaths", 2, []time.Duration{0, time.Second}, true},
		{"two deaths beyond the window", 2, []time.Duration{0, 11 * time.Minute}, false},
		{"three deaths, the first beyond the window", 2, []time.Duration{0, 11 * time.Minute, time.Minute}, true},
		{"after 1", 1, []time.Duration{0}, true},
		{"after 3, two deaths", 3, []time.Duration{0, time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tb := newTable(t, Options{After: tt.after, Window: 10 * time.Minute})
				for _, gap := range tt.deaths {
					time.Sleep(gap)
					died(tb, "/boom")
				}
				if got := !admits(tb, "/boom"); got != tt.want {
					t.Errorf("quarantined: got %v, want %v", got, tt.want)
				}
				if !admits(tb, "/other") {
					t.Error("another shape was refused")
				}
				st := tb.Stats(time.Now())
				if q := st.Quarantined == 1; q != tt.want {
					t.Errorf("Stats: got %+v, want quarantined %v", st, tt.want)
				}
				if tt.want && (st.Sheds != 1 || st.Shapes[0] != "GET /boom") {
					t.Errorf("Stats: got %+v, want 1 shed of GET /boom", st)
				}
			})
		})
	}
}

// A shape served between the deaths it was in flight at is a bystander:
// with several requests in flight on the dead worker, a popular route is
// a suspect at many deaths without being their cause.
func TestServedShapeIsNotQuarantined(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable(t, Options{})
		for range 5 {
			died(tb, "/boom", "/")
			for range 3 {
				if !admits(tb, "/") {
					t.Fatal("the bystander was refused")
				}
			}
			time.Sleep(time.Second)
		}
		if admits(tb, "/boom") {
			t.Error("the shape at every death and never served was let through")
		}
		if !admits(tb, "/") {
			t.Error("the bystander was refused")
		}
	})
}

// Past its quarantine a shape is on probation: one request at a time goes
// through. A probe served puts it on parole, and a death on parole sends
// it back for twice as long; a probe that fails does too. Quarantines grow
// up to MaxQuarantine; a parole without a death forgets the shape.
func TestProbation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const q, window = time.Minute, 10 * time.Minute
		tb := newTable(t, Options{After: 1, Window: window, Quarantine: q, MaxQuarantine: 4 * q})
		died(tb, "/boom")
		wantPause := func(d time.Duration) {
			t.Helper()
			time.Sleep(d - time.Nanosecond)
			if admits(tb, "/boom") {
				t.Fatalf("let through before the end of a %v quarantine", d)
			}
			time.Sleep(time.Nanosecond)
		}
		wantPause(q)

		// The probe fails at its worker: back for 2q.
		probe, ok := tb.Admit(time.Now(), "GET", "/boom")
		if !ok {
			t.Fatal("the probe was refused")
		}
		if _, ok := tb.Admit(time.Now(), "GET", "/boom"); ok {
			t.Fatal("a second request went through beside the probe")
		}
		tb.Done(time.Now(), probe, Failed)
		wantPause(2 * q)

		// The probe is never sent: the next request probes.
		probe, _ = tb.Admit(time.Now(), "GET", "/boom")
		tb.Done(time.Now(), probe, NotSent)
		probe, ok = tb.Admit(time.Now(), "GET", "/boom")
		if !ok {
			t.Fatal("after a probe not sent: refused, want the next probe")
		}
		// It is in flight at a death: back for 4q.
		died(tb, "/boom")
		tb.Done(time.Now(), probe, Failed) // after the death: changes nothing
		wantPause(4 * q)

		// Probe served: on parole, every request goes through; a death
		// on parole: back at once, for MaxQuarantine (not 8q).
		if !admits(tb, "/boom") {
			t.Fatal("the probe was refused")
		}
		for range 3 {
			if !admits(tb, "/boom") {
				t.Fatal("refused on parole")
			}
		}
		died(tb, "/boom")
		wantPause(4 * q)

		// A parole without deaths forgets the shape: it takes After deaths
		// again, and the next quarantine is q.
		admits(tb, "/boom")
		time.Sleep(window)
		if st := tb.Stats(time.Now()); st.Tracked != 0 || st.Quarantines != 4 {
			t.Errorf("after the parole: got %+v, want nothing tracked, 4 quarantines", st)
		}
		died(tb, "/boom")
		wantPause(q)
	})
}

// A shape on probation that nobody asks for is forgotten a window after
// its quarantine ended; one asked for (refused) is kept until then.
func TestIdleProbationIsForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const q, window = time.Minute, 10 * time.Minute
		tb := newTable(t, Options{After: 1, Window: window, Quarantine: q})
		died(tb, "/boom")
		time.Sleep(q + window - time.Second)
		if st := tb.Stats(time.Now()); st.Quarantined != 1 {
			t.Fatalf("a window after the quarantine less a second: got %+v, want it on probation", st)
		}
		time.Sleep(2 * time.Second)
		if st := tb.Stats(time.Now()); st.Tracked != 0 {
			t.Errorf("a window after the quarantine: got %+v, want it forgotten", st)
		}
	})
}

// Deaths of different paths under one first segment quarantine the
// coarse shape: varying the rest of the path does not evade the table.
func TestCoarseShapeCatchesVariants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable(t, Options{})
		died(tb, "/render/alpha")
		died(tb, "/render/beta")
		if admits(tb, "/render/gamma") {
			t.Error("/render/gamma let through after /render/alpha and /render/beta killed")
		}
		if !admits(tb, "/other/gamma") {
			t.Error("/other/gamma refused")
		}
	})
}

// The table never holds more than MaxShapes; it forgets the shapes that
// are merely watched before the quarantined ones.
func TestTableIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newTable(t, Options{MaxShapes: 4})
		died(tb, "/boom")
		died(tb, "/boom")
		for i := range 100 {
			died(tb, fmt.Sprintf("/x%c", 'a'+i%26), fmt.Sprintf("/y%c", 'a'+i%26))
			time.Sleep(time.Millisecond)
		}
		st := tb.Stats(time.Now())
		if st.Tracked > 4 {
			t.Errorf("tracked %d shapes, want at most 4", st.Tracked)
		}
		if admits(tb, "/boom") {
			t.Error("the quarantined shape was forgotten for watched ones")
		}
	})
}

func BenchmarkAdmit(b *testing.B) {
	for _, tracked := range []int{0, 100} {
		b.Run(fmt.Sprintf("tracked=%d", tracked), func(b *testing.B) {
			tb, _ := New(Options{})
			now := time.Now()
			for i := range tracked {
				tb.Died(now, []Request{{Method: "GET", Path: fmt.Sprintf("/p%c%c/x", 'a'+i%26, 'a'+i/26)}})
			}
			b.ReportAllocs()
			for b.Loop() {
				tk, _ := tb.Admit(now, "GET", "/users/42/avatar")
				tb.Done(now, tk, Served)
			}
		})
	}
}
