package server_test

import (
	"context"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/server"
)

// Signals with real signals, sent by the test process to itself (SIGUSR1:
// nobody else listens for it).
func TestSignals(t *testing.T) {
	cut := make(chan struct{}, 2)
	ctx, stop := server.Signals(context.Background(), func() { cut <- struct{}{} }, syscall.SIGUSR1)
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	recv(t, ctx.Done(), "the first signal to cancel the context")
	if len(cut) != 0 {
		t.Fatal("first signal cut")
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	recv(t, cut, "the second signal to cut")
}
