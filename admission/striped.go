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
	// Goroutine stacks are distinct allocations of at least 8 KiB: bits
	// from 13 up tell goroutines apart. The address is only hashed, never
	// dereferenced.
	p := uintptr(unsafe.Pointer(&here))
	c.stripe[(p>>13^p>>16)%stripes].n.Add(1)
}

func (c *stripedCounter) load() uint64 {
	var n uint64
	for i := range c.stripe {
		n += c.stripe[i].n.Load()
	}
	return n
}
