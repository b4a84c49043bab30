package app

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

// A rolling restart's next worker waits while requests are queued: the
// supervisor's Settled is the Controller's queue empty.
func TestQueueEmptySettlesARoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := admission.New(admission.Options{Limit: limit.NewFixed(1), QueueSize: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		settled := queueEmpty(c)
		held, err := c.Acquire(t.Context(), admission.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if !settled() {
			t.Error("settled is false with a slot taken and nothing queued")
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		got := make(chan error, 1)
		go func() {
			p, err := c.Acquire(ctx, admission.Request{})
			if err == nil {
				p.Release()
			}
			got <- err
		}()
		synctest.Wait()
		if settled() {
			t.Error("settled is true with a request queued")
		}
		held.Release()
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		if !settled() {
			t.Error("settled is false once the queue was served")
		}
	})
}
