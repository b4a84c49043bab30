package testutil_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/testutil"
)

// Two writers at once, as a child's stdout and stderr, and a reader: the
// race detector checks the locking, the count that nothing is lost.
func TestBufferConcurrentWrites(t *testing.T) {
	var b testutil.Buffer
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := range 100 {
				fmt.Fprintf(&b, "%d:%d\n", w, i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "\n"); got != 200 {
		t.Errorf("got %d lines, want 200", got)
	}
}

func TestBufferTail(t *testing.T) {
	var b testutil.Buffer
	b.Write([]byte("hello, world"))
	tests := []struct {
		n    int
		want string
	}{{5, "world"}, {12, "hello, world"}, {100, "hello, world"}, {0, ""}}
	for _, tt := range tests {
		if got := b.Tail(tt.n); got != tt.want {
			t.Errorf("Tail(%d): got %q, want %q", tt.n, got, tt.want)
		}
	}
}
