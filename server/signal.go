package server

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Signals turns process signals into a drain and a cut: it returns a
// context that the first of sigs cancels (pass it to Run or Serve, which
// then drain) and calls cut on the second (pass the Server's Cut). With no
// sigs it listens for SIGTERM and SIGINT. The context's cause names the
// signal. Further signals are ignored: the process is already on its way
// out.
//
// stop stops listening, cancels the context and waits for Signals'
// goroutine to end; call it once Run has returned. It is safe to call more
// than once.
func Signals(parent context.Context, cut func(), sigs ...os.Signal) (ctx context.Context, stop func()) {
	if len(sigs) == 0 {
		sigs = []os.Signal{syscall.SIGTERM, os.Interrupt}
	}
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, sigs...)
	ctx, stopWatch := watchSignals(parent, cut, ch)
	return ctx, func() {
		signal.Stop(ch)
		stopWatch()
	}
}

// watchSignals is Signals without the process: signals arrive on ch.
func watchSignals(parent context.Context, cut func(), ch <-chan os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		n := 0
		for {
			select {
			case sig := <-ch:
				n++
				switch n {
				case 1:
					cancel(fmt.Errorf("server: received %v: draining", sig))
				case 2:
					cut()
				}
			case <-done:
				return
			}
		}
	})
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			cancel(context.Canceled)
		})
	}
}
