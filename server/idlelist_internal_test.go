package server

import "testing"

// The idle list keeps connections in the order they went idle, through
// removals from its front, middle and back, and a connection may join it
// again after leaving.
func TestIdleListOrder(t *testing.T) {
	var l idleList
	c := make([]*clientConn, 4)
	for i := range c {
		c[i] = &clientConn{}
		l.pushBack(c[i])
	}
	l.remove(c[1]) // middle
	l.remove(c[3]) // back
	l.pushBack(c[1])
	l.remove(c[0]) // front
	l.pushBack(c[3])
	want := []*clientConn{c[2], c[1], c[3]}
	var got []*clientConn
	for x := l.front; x != nil; x = x.idleNext {
		got = append(got, x)
	}
	if len(got) != len(want) || l.n != len(want) || l.back != c[3] {
		t.Fatalf("got %d connections (n %d), want %d", len(got), l.n, len(want))
	}
	for i := range want {
		if got[i] != want[i] || !got[i].inIdle {
			t.Errorf("position %d: got another connection, or one not marked idle", i)
		}
	}
	if c[0].inIdle || c[0].idleNext != nil || c[0].idlePrev != nil {
		t.Error("a removed connection keeps its links")
	}
	for _, x := range want {
		l.remove(x)
	}
	if l.front != nil || l.back != nil || l.n != 0 {
		t.Errorf("emptied: front %p, back %p, n %d", l.front, l.back, l.n)
	}
}
