package server

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
)

// The first signal cancels the context, the second cuts, later ones are
// ignored.
func TestWatchSignals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch := make(chan os.Signal)
		cuts := 0
		ctx, stop := watchSignals(context.Background(), func() { cuts++ }, ch)

		ch <- syscall.SIGTERM
		synctest.Wait()
		if ctx.Err() == nil || cuts != 0 {
			t.Fatalf("after one signal: got ctx.Err %v and %d cuts, want cancelled and 0", ctx.Err(), cuts)
		}
		if cause := context.Cause(ctx); cause == nil || !strings.Contains(cause.Error(), "terminated") {
			t.Errorf("cause: got %v, want it to name the signal", cause)
		}
		ch <- os.Interrupt
		synctest.Wait()
		if cuts != 1 {
			t.Fatalf("after two signals: got %d cuts, want 1", cuts)
		}
		ch <- os.Interrupt
		synctest.Wait()
		if cuts != 1 {
			t.Errorf("after three signals: got %d cuts, want 1", cuts)
		}
		stop()
		stop()
	})
}

// stop without a signal cancels the context and ends the goroutine (the
// bubble would report it otherwise).
func TestWatchSignalsStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, stop := watchSignals(context.Background(), func() { t.Error("cut without a signal") }, make(chan os.Signal))
		if ctx.Err() != nil {
			t.Fatal("cancelled before any signal")
		}
		stop()
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Errorf("after stop: got %v, want context.Canceled", ctx.Err())
		}
	})
}
