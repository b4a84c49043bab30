package cli

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

// The demo says when its figures are those of a shared machine, rather
// than leave a reader to doubt what they show.
func TestDemoNotes(t *testing.T) {
	for _, tt := range []struct {
		name string
		got  string
		want string // "" for no note
	}{
		{"idle machine", busyNote(0.4, 2), ""},
		{"at its CPUs", busyNote(2, 2), ""},
		{"busy machine", busyNote(12.4, 2), "note: this machine is busy (load average 12.4 on 2 CPUs)"},
		{"no load average", busyNote(-1, 2), ""},
		{"capacity steady", noisyNote(150, 180), ""},
		{"capacity moved", noisyNote(36, 160), "capacity moved between 36 and 160 renders/s"},
		{"no capacity", noisyNote(0, 0), ""},
		{"capacity held at 1x", fellNote(demoStep{multiple: 1, phase: loadgen.Phase{Name: "1x", Rate: 143}, after: 150}), ""},
		{"within the measurement's spread", fellNote(demoStep{multiple: 1, phase: loadgen.Phase{Name: "1x", Rate: 120}, after: 118}), ""},
		{"capacity fell at 1x", fellNote(demoStep{multiple: 1, phase: loadgen.Phase{Name: "1x", Rate: 143}, after: 118}),
			"note: at 1x the workers sustained 118/s after the step, a tenth or more under the 143/s it offered"},
		{"capacity fell at 0.5x", fellNote(demoStep{multiple: 0.5, phase: loadgen.Phase{Name: "0.5x", Rate: 70}, after: 60}), "at 0.5x the workers sustained 60/s"},
		{"past capacity, capacity held", fellNote(demoStep{multiple: 2, capacity: 150, phase: loadgen.Phase{Name: "2x", Rate: 300}, after: 140}), ""},
		{"capacity fell past capacity", fellNote(demoStep{multiple: 4, capacity: 160, phase: loadgen.Phase{Name: "4x", Rate: 640}, after: 120}),
			"note: at 4x the workers sustained 120/s after the step, a tenth or more under the 160/s capacity it was set against"},
		{"nothing measured after", fellNote(demoStep{multiple: 1, phase: loadgen.Phase{Name: "1x", Rate: 143}}), ""},
		{"fell behind unseen", behindNote(behind(1, 150, 0.91, 778*time.Millisecond)),
			"note: at 1x the server without admission answered its slowest 1% after 778ms: the workers fell behind the 127/s offered"},
		{"sluice shed nothing", behindNote(behind(1, 150, 1, 778*time.Millisecond)), ""},
		{"no standing queue without admission", behindNote(behind(1, 150, 0.97, 120*time.Millisecond)), ""},
		{"past capacity", behindNote(behind(2, 150, 0.5, 900*time.Millisecond)), ""},
		{"capacity fell: that note instead", behindNote(behind(1, 100, 0.91, 778*time.Millisecond)), ""},
		{"slower renders in sluice's turn", slowNote(slowStep(2, 112, 160, 0.98, 13400*time.Microsecond), 10*time.Millisecond),
			"note: at 2x sluice kept the workers rendering 98% of its turn, each render taking 13.4ms against its 10ms of work"},
		{"workers left idle", slowNote(slowStep(2, 112, 160, 0.6, 13400*time.Microsecond), 10*time.Millisecond), ""},
		{"renders at their speed", slowNote(slowStep(2, 112, 160, 0.98, 10200*time.Microsecond), 10*time.Millisecond), ""},
		{"goodput near capacity", slowNote(slowStep(2, 150, 160, 0.98, 13400*time.Microsecond), 10*time.Millisecond), ""},
		{"capacity fell: that note instead", slowNote(slowStep(2, 112, 120, 0.98, 13400*time.Microsecond), 10*time.Millisecond), ""},
		{"at capacity", slowNote(slowStep(1, 112, 160, 0.98, 13400*time.Microsecond), 10*time.Millisecond), ""},
		{"work not known", slowNote(demoStep{multiple: 2, capacity: 160, after: 160, phase: loadgen.Phase{Name: "2x", Rate: 320},
			stats: []loadgen.Stats{{Goodput: 112}}, work: []turnWork{{}}}, 10*time.Millisecond), ""},
	} {
		if tt.want == "" && tt.got != "" || !strings.Contains(tt.got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// behind returns a step of multiple m at 127/s offered, the capacity
// measured after it, sluice's success ratio and the p99 of the server
// without admission.
func behind(m, after, success float64, p99 time.Duration) demoStep {
	name := strconv.FormatFloat(m, 'f', -1, 64) + "x"
	sl := loadgen.Stats{Requests: 381, Successes: int64(381 * success), SuccessRatio: success}
	base := loadgen.Stats{Requests: 381, Successes: 381, SuccessRatio: 1}
	base.Latency.P99 = p99
	return demoStep{multiple: m, phase: loadgen.Phase{Name: name, Rate: 127}, after: after, stats: []loadgen.Stats{sl, base}}
}

// slowStep returns a step of multiple m against capacity (160/s, measured
// after it as after), in which sluice's goodput was goodput and its two
// workers rendered share of its 3 s turn, each render taking perRender.
func slowStep(m, goodput, after, share float64, perRender time.Duration) demoStep {
	span := 3 * time.Second
	busy := time.Duration(share * float64(2*span))
	return demoStep{
		multiple: m, capacity: 160, after: after,
		phase: loadgen.Phase{Name: strconv.FormatFloat(m, 'f', -1, 64) + "x", Rate: m * 160},
		stats: []loadgen.Stats{{Goodput: goodput}},
		work:  []turnWork{{known: true, busy: busy, rendered: int64(busy / perRender), span: span, workers: 2}},
	}
}

// Past capacity the baseline leaves its workers a backlog, so it runs after
// sluice; at or below capacity it runs first.
func TestStepOrder(t *testing.T) {
	for _, tt := range []struct {
		m    float64
		want []int
	}{
		{0.5, []int{1, 0}},
		{1, []int{1, 0}},
		{2, []int{0, 1}},
		{4, []int{0, 1}},
	} {
		if got := stepOrder(tt.m, 2); !slices.Equal(got, tt.want) {
			t.Errorf("stepOrder(%g, 2) = %v, want %v", tt.m, got, tt.want)
		}
	}
}

// The demo runs its ramp end to end, sluice and the baseline at every
// step, each step at its multiple of the capacity measured before it, and
// exits 0.
func TestDemoRunsTheRamp(t *testing.T) {
	p := startSluice(t, "demo", "-workers", "1", "-cpu", "2ms", "-step", "1s", "-loads", "0.5,2")
	if code := p.ExitCode(t, 60*time.Second); code != 0 {
		t.Fatalf("sluice demo exited %d:\n%s", code, p.Out.String())
	}
	out := p.Out.String()
	if !strings.Contains(out, "capacity, measured before each step in windows") {
		t.Errorf("no word of how capacity was measured:\n%s", out)
	}
	row := regexp.MustCompile(`(?m)^\s*(\d+)/s \(([\d.]+)x\)\s+(\d+)/s\s+(\d+/s|-)\s+(sluice|no admission)\s+\d+/s\s+\d+%\s+(\d+%|-)\s`)
	seen := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(out, -1) {
		seen[m[2]+" "+m[5]] = true
		if m[4] == "-" {
			t.Errorf("row %q: no capacity after the step, want one after every step, the last included", strings.TrimSpace(m[0]))
		}
		// The workers' busy share, read from their counters around the turn.
		if busy, err := strconv.Atoi(strings.TrimSuffix(m[6], "%")); err != nil || busy > 100 {
			t.Errorf("row %q: workers busy %q, want a share of the turn", strings.TrimSpace(m[0]), m[6])
		}
		offered, _ := strconv.Atoi(m[1])
		capacity, _ := strconv.Atoi(m[3])
		mult := map[string]int{"0.5": 1, "2": 4}[m[2]] // offered/capacity, in halves
		if d := 2*offered - mult*capacity; capacity <= 0 || d < -2 || d > 2 {
			t.Errorf("row %q: offered %d/s is not %sx the capacity %d/s", strings.TrimSpace(m[0]), offered, m[2], capacity)
		}
	}
	for _, want := range []string{"0.5 sluice", "0.5 no admission", "2 sluice", "2 no admission"} {
		if !seen[want] {
			t.Errorf("no row for %s:\n%s", want, out)
		}
	}
}

// A step during which the workers' capacity fell (the windows after it
// sustained a tenth less than it was set against) is run again, once,
// against the capacity measured since, and says so; a step during which
// it held is run once.
func TestDemoRerunsAStepWhoseCapacityFell(t *testing.T) {
	// The windows' rates, in the order the ramp asks for them: 8 before
	// the first step, 4 after each run of a step.
	script := [][]float64{
		{100, 100, 100, 100, 100, 100, 100, 100}, // before 0.5x
		{100, 100, 100, 100},                     // after 0.5x: held
		{100, 100, 100, 100},                     // after 2x: held
		{60, 60, 60, 60},                         // after 4x: fell (60 < 90% of 100)
		{50, 50, 50, 50},                         // after 4x again: it fell again, and is not run a third time
	}
	var asked int
	var turns []float64 // the rate of each step run
	steps, log := runScriptedRamp(t, &demoFlags{loads: []float64{0.5, 2, 4}, step: time.Second},
		func(n int) []float64 {
			if asked >= len(script) || len(script[asked]) != n {
				t.Fatalf("windows call %d asked for %d windows; script has %v", asked, n, script)
			}
			asked++
			return script[asked-1]
		},
		func(st *demoStep) { turns = append(turns, st.phase.Rate) })
	if asked != len(script) {
		t.Errorf("windows asked %d times, want %d", asked, len(script))
	}
	// 4x run first at 4 x 100 and then, set against the windows measured
	// after it (not the twelve kept, eight of them at 100), at 4 x 60; no
	// third time.
	if want := []float64{50, 200, 400, 240}; !slices.Equal(turns, want) {
		t.Errorf("steps run at %v/s, want %v", turns, want)
	}
	if len(steps) != 3 {
		t.Fatalf("%d steps, want 3", len(steps))
	}
	for _, s := range steps[:2] {
		if s.rerun != nil || rerunNote(s, 0) != "" {
			t.Errorf("%s: run again, though the capacity held", s.phase.Name)
		}
	}
	last := steps[2]
	if last.rerun == nil || last.rerun.after != 60 || last.after != 50 || last.capacity != 60 {
		t.Fatalf("4x: rerun %+v, capacity %v, after %v; want a first run that met 60/s, the second set against 60/s and met 50/s", last.rerun, last.capacity, last.after)
	}
	if note := rerunNote(last, 0); !strings.Contains(note, "at 4x the workers sustained 60/s after the step's first run") || !strings.Contains(note, "run again") {
		t.Errorf("rerunNote = %q", note)
	}
	if !strings.Contains(log, "capacity fell during the 4x step: running it again") {
		t.Errorf("nothing said while it ran:\n%s", log)
	}
}

// Windows after a step in most of which no render ended met a stall, not
// the workers' capacity: they are measured again, once, and the step's
// capacity after it is the second set's.
func TestDemoMeasuresAgainAfterAStall(t *testing.T) {
	script := [][]float64{
		{100, 100, 100, 100, 100, 100, 100, 100}, // before 0.5x
		{0, 0, 0, 100},                           // after 0.5x: a stall
		{100, 100, 100, 100},                     // after 0.5x, again
		{100, 100, 100, 100},                     // after 2x
	}
	var asked int
	steps, _ := runScriptedRamp(t, &demoFlags{loads: []float64{0.5, 2}, step: time.Second},
		func(n int) []float64 {
			if asked >= len(script) || len(script[asked]) != n {
				t.Fatalf("windows call %d asked for %d windows; script has %v", asked, n, script)
			}
			asked++
			return script[asked-1]
		},
		func(*demoStep) {})
	if asked != len(script) {
		t.Errorf("windows asked %d times, want %d", asked, len(script))
	}
	if len(steps) != 2 || steps[0].after != 100 || steps[0].rerun != nil {
		t.Fatalf("%d steps, the first's capacity after %v, run again %v; want 2, 100/s, no", len(steps), steps[0].after, steps[0].rerun != nil)
	}
}

// A step past capacity whose windows after show the capacity held, but in
// whose sluice turn the workers' renders took a tenth longer than their
// work and its goodput fell short, is run again once, at the same
// capacity; slowed renders in the other system's turn alone run it once,
// and a rerun slowed again is not run a third time.
func TestDemoRerunsAStepSluiceMetSlowed(t *testing.T) {
	const cpu = 10 * time.Millisecond
	slowed := func(st *demoStep, j int) {
		// 98% busy, 13.4 ms a render; served 70/s of the 100/s capacity.
		s := slowStep(st.multiple, 70, 100, 0.98, 13400*time.Microsecond)
		st.stats[j], st.work[j] = s.stats[0], s.work[0]
	}
	held := func(st *demoStep, j int) {
		st.stats[j] = loadgen.Stats{Goodput: 0.97 * st.capacity}
		st.work[j] = turnWork{known: true, busy: 2 * time.Second, rendered: 200, span: time.Second, workers: 2}
	}
	// The turns of each run, sluice's first: 2x slowed then held, 4x
	// with the baseline's turn slowed, 8x slowed twice.
	script := [][2]func(*demoStep, int){{slowed, held}, {held, held}, {held, slowed}, {slowed, held}, {slowed, held}}
	var turns []float64
	steps, log := runScriptedRamp(t, &demoFlags{loads: []float64{2, 4, 8}, step: time.Second, cpu: cpu},
		func(n int) []float64 { return slices.Repeat([]float64{100}, n) },
		func(st *demoStep) {
			if len(turns) >= len(script) {
				t.Fatalf("run %d of a step: the script has %d", len(turns)+1, len(script))
			}
			for j, turn := range script[len(turns)] {
				turn(st, j)
			}
			turns = append(turns, st.phase.Rate)
		})
	if want := []float64{200, 200, 400, 800, 800}; !slices.Equal(turns, want) {
		t.Errorf("steps run at %v/s, want %v", turns, want)
	}
	if len(steps) != 3 {
		t.Fatalf("%d steps, want 3", len(steps))
	}
	first := steps[0]
	if first.rerun == nil || first.rerun.stats[0].Goodput != 70 || first.stats[0].Goodput != 97 || first.capacity != 100 {
		t.Fatalf("2x: rerun %+v, goodput %v against %v; want a first run that served 70/s, the second 97/s against 100/s", first.rerun, first.stats[0].Goodput, first.capacity)
	}
	note := rerunNote(first, cpu)
	for _, want := range []string{"at 2x sluice's turn in the step's first run served 70/s of the 100/s capacity", "each render taking 13.4ms against its 10ms", "run again"} {
		if !strings.Contains(note, want) {
			t.Errorf("rerunNote = %q, want it to say %q", note, want)
		}
	}
	if steps[1].rerun != nil || rerunNote(steps[1], cpu) != "" {
		t.Errorf("4x: run again for the baseline's slowed turn")
	}
	if last := steps[2]; last.rerun == nil || slowNote(last, cpu) == "" {
		t.Errorf("8x: rerun %v, slowNote %q; want a rerun whose own slowed turn the note still reports", last.rerun, slowNote(last, cpu))
	}
	if !strings.Contains(log, "other processes took the workers' CPU during sluice's turn at the 2x step: running it again") {
		t.Errorf("nothing said while it ran:\n%s", log)
	}
}

// runScriptedRamp runs a demo ramp of f's steps against two systems whose
// capacity windows and turns are scripted: windows returns n windows'
// rates, and turn fills a step's stats and work for each of its runs. It
// returns the steps and what the ramp said while it ran.
func runScriptedRamp(t *testing.T, f *demoFlags, windows func(n int) []float64, turn func(st *demoStep)) ([]demoStep, string) {
	t.Helper()
	r := &demoRamp{
		f:        f,
		windows:  func(n int, _ time.Duration) ([]float64, error) { return windows(n), nil },
		capacity: newCapacityWindows(windowsKept),
		names:    []string{"sluice", "no admission"},
		urls:     []string{"sluice", "baseline"},
		idle:     func(context.Context) error { return nil },
		turns: func(_ context.Context, st *demoStep) error {
			turn(st)
			return nil
		},
	}
	var log strings.Builder
	steps, err := r.run(t.Context(), &log)
	if err != nil {
		t.Fatal(err)
	}
	return steps, log.String()
}
