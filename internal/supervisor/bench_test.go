package supervisor

import (
	"context"
	"io"
	"os"
	"strconv"
	"testing"
	"time"
)

// startFakes runs a Supervisor of n fake workers (no synctest: the fakes
// are ready at once) until b ends.
func startFakes(b *testing.B, n int) *Supervisor {
	rec := &recorder{}
	fe := newFakeEnv(rec)
	sup, err := newSupervisor(newFakeBalancer(rec), Options{Command: []string{"w"}, Count: n}, fe.env())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- sup.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		<-done
	})
	deadline := time.Now().Add(10 * time.Second)
	for len(rec.take()) == 0 || !sup.Ready() {
		if time.Now().After(deadline) {
			b.Fatal("fake workers not ready")
		}
		time.Sleep(time.Millisecond)
	}
	return sup
}

// Ready backs sluice's readiness endpoint, which load balancers poll.
func BenchmarkReady(b *testing.B) {
	for _, n := range []int{2, 64} {
		b.Run(strconv.Itoa(n)+"workers", func(b *testing.B) {
			sup := startFakes(b, n)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					sup.Ready()
				}
			})
		})
	}
}

func BenchmarkStats(b *testing.B) {
	sup := startFakes(b, 8)
	b.ReportAllocs()
	for b.Loop() {
		sup.Stats()
	}
}

// BenchmarkStartProcess is the cost the supervisor adds to a worker start:
// fork and exec (of /bin/true) in a new process group with output pipes,
// through the spawner's thread, then reaping and the group sweep.
func BenchmarkStartProcess(b *testing.B) {
	if _, err := os.Stat("/bin/true"); err != nil {
		b.Skip("no /bin/true")
	}
	sp := newSpawner()
	defer sp.stop()
	spec := procSpec{Path: "/bin/true", Args: []string{"true"}, Stdout: io.Discard, Stderr: io.Discard}
	b.ReportAllocs()
	for b.Loop() {
		var p process
		var err error
		sp.do(func() { p, err = startProcess(spec) })
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}
