package admission_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/admission"
)

// ShedReason reads Acquire's error as it is and wrapped, and tells it
// from nil and other errors.
func TestShedReason(t *testing.T) {
	c := newController(t, 1, admission.Options{QueueSize: -1})
	held, err := c.Acquire(context.Background(), admission.Request{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	_, shed := c.Acquire(context.Background(), admission.Request{})
	for _, tt := range []struct {
		name string
		err  error
		want admission.Reason
		ok   bool
	}{
		{"Acquire's", shed, admission.ReasonLimit, true},
		{"wrapped", fmt.Errorf("upstream: %w", shed), admission.ReasonLimit, true},
		{"nil", nil, admission.ReasonNone, false},
		{"another", errors.New("x"), admission.ReasonNone, false},
		{"context", context.Canceled, admission.ReasonNone, false},
	} {
		if r, ok := admission.ShedReason(tt.err); r != tt.want || ok != tt.ok {
			t.Errorf("%s: got %v, %v; want %v, %v", tt.name, r, ok, tt.want, tt.ok)
		}
	}
}

// Reading the reason of Acquire's error, or of nil (as the Controller
// does for every request it admits), allocates nothing.
func TestShedReasonAllocatesNothing(t *testing.T) {
	c := newController(t, 1, admission.Options{QueueSize: -1})
	held, err := c.Acquire(context.Background(), admission.Request{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	_, shed := c.Acquire(context.Background(), admission.Request{})
	for _, err := range []error{shed, nil} {
		if n := testing.AllocsPerRun(100, func() { admission.ShedReason(err) }); n != 0 {
			t.Errorf("ShedReason(%v): %v allocations, want 0", err, n)
		}
	}
}
