package limit

import "sync/atomic"

// Fixed is a constant limit: Observe and Tick never change it, only Set does.
// Use it when the capacity is known, e.g. the number of worker slots.
//
// The zero value is a limit of 1. A Fixed is safe for concurrent use.
type Fixed struct {
	n atomic.Int64
}

var _ Algorithm = (*Fixed)(nil)

// NewFixed returns a Fixed limit of n; n < 1 is clamped to 1.
func NewFixed(n int) *Fixed {
	f := new(Fixed)
	f.Set(n)
	return f
}

// Set changes the limit to n; n < 1 is clamped to 1.
func (f *Fixed) Set(n int) { f.n.Store(int64(max(n, 1))) }

// Limit returns the limit.
func (f *Fixed) Limit() int { return int(max(f.n.Load(), 1)) }

// Observe returns the limit.
func (f *Fixed) Observe(Sample) int { return f.Limit() }

// Tick returns the limit.
func (f *Fixed) Tick(Window) int { return f.Limit() }
