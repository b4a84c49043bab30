package testutil

import (
	"context"
	"net"
	"sync"
	"syscall"
)

// Network is an in-memory network of net.Pipe connections, for servers
// and clients under testing/synctest: a bubble cannot wait on real
// sockets, and on pipes their timers run on the bubble's clock. Dial finds
// the Listener by its address. The zero value is an empty network; it is
// safe for concurrent use.
type Network struct {
	mu sync.Mutex
	ls map[string]*Listener
}

// Listen returns a listener at addr, in place of any listener there.
func (n *Network) Listen(addr string) *Listener {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ls == nil {
		n.ls = make(map[string]*Listener)
	}
	l := newListener(n, addr)
	n.ls[addr] = l
	return l
}

// Dial connects to the listener at addr, blocking until it accepts. With
// no listener there, or once it is closed, the error is a *net.OpError
// whose cause is syscall.ECONNREFUSED, as a real refused dial's.
func (n *Network) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.ls[addr]
	n.mu.Unlock()
	if l == nil {
		return nil, refused(network, addr)
	}
	return l.Dial(ctx, network, addr)
}

// Listener is a net.Listener of in-memory connections, made by a
// Network's Listen or by NewListener. It is safe for concurrent use.
type Listener struct {
	n      *Network // nil for a listener of its own
	addr   string
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

// NewListener returns a listener outside any Network, reached through its
// own Dial.
func NewListener() *Listener { return newListener(nil, "pipe") }

func newListener(n *Network, addr string) *Listener {
	return &Listener{n: n, addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Dial connects to l, whatever network and addr say, blocking until l
// accepts; it fails as Network.Dial does once l is closed. It has the
// signature of http.Transport.DialContext.
func (l *Listener) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, refused(network, l.addr)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Accept waits for a Dial, or returns net.ErrClosed once l is closed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops l accepting and removes it from its Network. The connections
// it accepted stay open.
func (l *Listener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		if l.n == nil {
			return
		}
		l.n.mu.Lock()
		if l.n.ls[l.addr] == l {
			delete(l.n.ls, l.addr)
		}
		l.n.mu.Unlock()
	})
	return nil
}

// Closed reports whether l has been closed.
func (l *Listener) Closed() bool {
	select {
	case <-l.closed:
		return true
	default:
		return false
	}
}

// Addr returns the address l was made with ("pipe" for NewListener's).
func (l *Listener) Addr() net.Addr { return memAddr(l.addr) }

type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }

func refused(network, addr string) error {
	return &net.OpError{Op: "dial", Net: network, Addr: memAddr(addr), Err: syscall.ECONNREFUSED}
}

var _ net.Listener = (*Listener)(nil)
