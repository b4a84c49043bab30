package admission

import (
	"sync/atomic"
	"unsafe"
)

// stripes is the number of cache lines a stripedCounter spreads over.
const stripes = 8

// stripedCounter is a counter that goroutines on different cores can add
// to without fighting over one cache line: each add goes to the stripe
// chosen by the adding goroutine's stack address, so concurrent goroutines
// mostly add to different lines, and a reader sums them.
type stripedCounter struct {
	stripe [stripes]struct {
		n atomic.Uint64
		_ [56]byte // one cache line each
	}
}

func (c *stripedCounter) add() {
	var here byte
	// Goroutine stacks are distinct allocations of at least 2 KiB (the
	// runtime's smallest), often adjacent: bits from 11 up tell
	// goroutines apart (from 13 up, four neighbours shared a stripe). The
	// address is only hashed, never dereferenced.
	p := uintptr(unsafe.Pointer(&here))
	c.stripe[(p>>11^p>>14)%stripes].n.Add(1)
}

func (c *stripedCounter) load() uint64 {
	var n uint64
	for i := range c.stripe {
		n += c.stripe[i].n.Load()
	}
	return n
}
