package supervisor

import "runtime"

// spawner runs functions (process starts) on one OS thread that lives as
// long as the supervisor.
//
// On Linux a worker's parent-death signal fires when the thread that forked
// it exits, not when sluice does (Go issue #27505). Go threads do exit: a
// goroutine that ends while locked to its thread takes the thread with it,
// and the runtime may retire idle threads. If a worker were forked from an
// arbitrary goroutine, the death of that goroutine's thread would SIGKILL a
// healthy worker. So every start happens on the spawner's goroutine, which
// locks its thread and keeps it until the supervisor has reaped every
// worker. It never unlocks: when it ends, its thread ends too, and any
// process that somehow survived would get its SIGKILL then.
type spawner struct {
	reqs chan func()
	done chan struct{}
}

func newSpawner() *spawner {
	sp := &spawner{reqs: make(chan func()), done: make(chan struct{})}
	go sp.loop()
	return sp
}

func (sp *spawner) loop() {
	runtime.LockOSThread()
	defer close(sp.done)
	for f := range sp.reqs {
		f()
	}
}

// do runs f on the spawner's thread and returns when f has. It must not be
// called after stop.
func (sp *spawner) do(f func()) {
	finished := make(chan struct{})
	sp.reqs <- func() {
		defer close(finished)
		f()
	}
	<-finished
}

// stop ends the spawner and its thread, once no do is running or to come.
func (sp *spawner) stop() {
	close(sp.reqs)
	<-sp.done
}
