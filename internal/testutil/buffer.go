package testutil

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent use: a child process's
// stdout and stderr are copied into it by two goroutines while a test
// reads it. The zero value is an empty buffer.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Tail returns the last n bytes written, or all of them if fewer.
func (b *Buffer) Tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.b.Bytes()
	return string(p[max(len(p)-n, 0):])
}
