package admission_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

// A service time lands in the first bucket whose bound is at least it.
func TestHistogramBuckets(t *testing.T) {
	const us = time.Microsecond
	tests := []struct {
		rtt    time.Duration
		bucket int
	}{
		{0, 0},
		{1, 0},
		{50 * us, 0},
		{50*us + 1, 1},
		{100 * us, 1},
		{3 * time.Millisecond, 6}, // (1.6 ms, 3.2 ms]
		{admission.BucketBound(admission.HistogramBuckets - 1), admission.HistogramBuckets - 1},
		{admission.BucketBound(admission.HistogramBuckets-1) + 1, admission.HistogramBuckets},
		{time.Hour, admission.HistogramBuckets},
	}
	for _, tc := range tests {
		c := newController(t, 10, admission.Options{SampleWindow: -1})
		p, err := c.Acquire(context.Background(), admission.Request{})
		if err != nil {
			t.Fatal(err)
		}
		p.DoneSample(limit.Sample{Now: time.Now(), RTT: tc.rtt})
		hs := c.Histograms()
		h := hs.Service(admission.Critical, admission.ServiceDone)
		if h.Counts[tc.bucket] != 1 || h.Count() != 1 {
			t.Errorf("%v: got counts %v, want one in bucket %d", tc.rtt, h.Counts, tc.bucket)
		}
		if h.Sum != tc.rtt {
			t.Errorf("%v: got sum %v, want %v", tc.rtt, h.Sum, tc.rtt)
		}
	}
	if got, want := admission.BucketBound(0), 50*us; got != want {
		t.Errorf("got first bound %v, want %v", got, want)
	}
	if got, want := admission.BucketBound(admission.HistogramBuckets-1), 104857600*us; got != want {
		t.Errorf("got last bound %v, want %v", got, want)
	}
}

func TestHistogramQuantile(t *testing.T) {
	const us = time.Microsecond
	var inBucket2, spread, overflow admission.Histogram
	inBucket2.Counts[2] = 100 // (100 µs, 200 µs]
	spread.Counts[0], spread.Counts[3] = 90, 10
	overflow.Counts[admission.HistogramBuckets] = 5
	tests := []struct {
		name string
		h    admission.Histogram
		q    float64
		want time.Duration
	}{
		{"empty", admission.Histogram{}, 0.5, -1},
		{"median inside a bucket", inBucket2, 0.5, 150 * us},
		{"top of a bucket", inBucket2, 1, 200 * us},
		{"p50 in the first bucket, from zero", spread, 0.5, 50 * us * 50 / 90},
		{"p99 in a later bucket", spread, 0.99, 200*us + 200*us*9/10},
		{"past the last bound", overflow, 0.99, admission.BucketBound(admission.HistogramBuckets - 1)},
	}
	for _, tc := range tests {
		if got := tc.h.Quantile(tc.q); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Every Acquire is counted once in the queue-wait histograms, under its
// class and outcome, with the time it waited; every timed give-back once
// in the service-time histograms.
func TestControllerHistograms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, admission.Options{SampleWindow: -1, QueueSize: 2, QueueTimeout: 50 * time.Millisecond})
		ctx := context.Background()
		first, err := c.Acquire(ctx, admission.Request{Priority: admission.CriticalPlus})
		if err != nil {
			t.Fatal(err)
		}
		// A Critical request queues behind it and is admitted 10 ms later.
		admitted := make(chan admission.Permit)
		go func() {
			p, err := c.Acquire(ctx, admission.Request{})
			if err != nil {
				t.Error(err)
			}
			admitted <- p
		}()
		// A Sheddable request queues and its caller gives up after 2 ms.
		cctx, cancel := context.WithCancel(ctx)
		cancelled := make(chan error)
		go func() {
			_, err := c.Acquire(cctx, admission.Request{Priority: admission.Sheddable})
			cancelled <- err
		}()
		synctest.Wait()
		time.Sleep(2 * time.Millisecond)
		cancel()
		if err := <-cancelled; !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		time.Sleep(8 * time.Millisecond)
		first.Done() // held 10 ms
		p := <-admitted
		// A Sheddable request waits out the queue timeout while p runs.
		if _, err := c.Acquire(ctx, admission.Request{Priority: admission.Sheddable}); !isShed(err, admission.ReasonQueueTimeout) {
			t.Fatalf("got %v, want a queue-timeout shed", err)
		}
		p.DoneSample(limit.Sample{Now: time.Now(), RTT: 3 * time.Millisecond, Dropped: true})

		hs := c.Histograms()
		type key struct {
			p admission.Priority
			o admission.WaitOutcome
		}
		wantWait := map[key]time.Duration{ // one observation each, of this wait
			{admission.CriticalPlus, admission.WaitAdmitted}: 0,
			{admission.Critical, admission.WaitAdmitted}:     10 * time.Millisecond,
			{admission.Sheddable, admission.WaitCancelled}:   2 * time.Millisecond,
			{admission.Sheddable, admission.WaitShed}:        50 * time.Millisecond,
		}
		for _, pr := range admission.Priorities() {
			for _, o := range admission.WaitOutcomes() {
				h := hs.QueueWait(pr, o)
				want, ok := wantWait[key{pr, o}]
				switch {
				case !ok && h.Count() != 0:
					t.Errorf("wait %v %v: got %d observations, want none", pr, o, h.Count())
				case ok && (h.Count() != 1 || h.Sum != want):
					t.Errorf("wait %v %v: got %d observations summing %v, want 1 of %v", pr, o, h.Count(), h.Sum, want)
				}
			}
		}
		if h := hs.Service(admission.CriticalPlus, admission.ServiceDone); h.Count() != 1 || h.Sum != 10*time.Millisecond {
			t.Errorf("service critical-plus done: got %d summing %v, want 1 of 10ms", h.Count(), h.Sum)
		}
		if h := hs.Service(admission.Critical, admission.ServiceDropped); h.Count() != 1 || h.Sum != 3*time.Millisecond {
			t.Errorf("service critical dropped: got %d summing %v, want 1 of 3ms", h.Count(), h.Sum)
		}
		if h := hs.Service(admission.Critical, admission.ServiceDone); h.Count() != 0 {
			t.Errorf("service critical done: got %d observations, want none", h.Count())
		}
	})
}

// The queue-wait histograms agree with Stats: admitted and shed counts
// match whichever path admitted or shed, the fast one included.
func TestHistogramsAgreeWithStats(t *testing.T) {
	c := newController(t, 2, admission.Options{SampleWindow: -1, QueueSize: -1})
	ctx := context.Background()
	var held []admission.Permit
	for _, pr := range []admission.Priority{admission.Critical, admission.Sheddable, admission.Critical} {
		p, err := c.Acquire(ctx, admission.Request{Priority: pr})
		if err == nil {
			held = append(held, p)
		}
	}
	for _, p := range held {
		p.Release() // untimed: no service-time observation
	}
	st, hs := c.Stats(), c.Histograms()
	var admitted, shed, service uint64
	for _, pr := range admission.Priorities() {
		a, s := hs.QueueWait(pr, admission.WaitAdmitted), hs.QueueWait(pr, admission.WaitShed)
		admitted += a.Count()
		shed += s.Count()
		for _, o := range admission.ServiceOutcomes() {
			h := hs.Service(pr, o)
			service += h.Count()
		}
	}
	if admitted != st.Admitted || admitted != 2 {
		t.Errorf("got %d admitted in the histograms, %d in Stats, want 2", admitted, st.Admitted)
	}
	if shed != st.Shed.Total() || shed != 1 {
		t.Errorf("got %d shed in the histograms, %d in Stats, want 1", shed, st.Shed.Total())
	}
	if service != 0 {
		t.Errorf("got %d service observations after Release only, want 0", service)
	}
	if h := hs.QueueWait(admission.Sheddable, admission.WaitAdmitted); h.Counts[0] != 1 {
		t.Errorf("sheddable admitted: got counts %v, want one zero wait", h.Counts)
	}
}

// Recording costs the request path no allocation, and a snapshot none
// either.
func TestHistogramsAllocateNothing(t *testing.T) {
	c := newController(t, 10, admission.Options{SampleWindow: -1})
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		p, _ := c.Acquire(ctx, admission.Request{Priority: admission.SheddablePlus})
		p.Done()
	}); n != 0 {
		t.Errorf("Acquire and Done: got %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(10, func() { _ = c.Histograms() }); n != 0 {
		t.Errorf("Histograms: got %v allocations, want 0", n)
	}
}

func TestOutcomeStrings(t *testing.T) {
	var got []string
	for _, o := range admission.WaitOutcomes() {
		got = append(got, o.String())
	}
	for _, o := range admission.ServiceOutcomes() {
		got = append(got, o.String())
	}
	want := []string{"admitted", "shed", "cancelled", "done", "dropped"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("got %v, want %v", got, want)
			break
		}
	}
}

func isShed(err error, want admission.Reason) bool {
	r, ok := admission.ShedReason(err)
	return ok && r == want
}
