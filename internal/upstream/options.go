package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// Defaults applied by New to zero fields of Options.
const (
	DefaultDialTimeout = 2 * time.Second
	DefaultMaxIdle     = 1
	// DefaultIdleTimeout is shorter than Node.js's 5 s keepAliveTimeout,
	// so that sluice, not the worker, closes an idle connection: a request
	// is then never written into a connection the worker is closing.
	DefaultIdleTimeout = 4 * time.Second
)

// Options configure a Client. New replaces the zero value of every field
// but the address with the default its comment gives.
type Options struct {
	// Network and Addr are the upstream's address, as Dial takes them.
	Network, Addr string
	// Dial opens a connection; nil means a net.Dialer's DialContext.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// DialTimeout bounds a dial; zero means DefaultDialTimeout.
	DialTimeout time.Duration
	// MaxIdle is how many idle connections are kept; zero means
	// DefaultMaxIdle.
	MaxIdle int
	// IdleTimeout is how long an idle connection is kept; zero means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Unsolicited, when set, is called each time the upstream is found to
	// have sent bytes outside any response, on the goroutine that found it.
	Unsolicited func()
}

// Validate reports every invalid field of o, one error each (errors.Join).
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("upstream: "+format, args...)) }
	if o.DialTimeout < 0 {
		bad("Options.DialTimeout %v is negative (0 means the default)", o.DialTimeout)
	}
	if o.MaxIdle < 0 {
		bad("Options.MaxIdle %d is negative (0 means the default)", o.MaxIdle)
	}
	if o.IdleTimeout < 0 {
		bad("Options.IdleTimeout %v is negative (0 means the default)", o.IdleTimeout)
	}
	return errors.Join(errs...)
}

// New returns a Client for the upstream o names, or o.Validate's error.
// It opens no connection.
func New(o Options) (*Client, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	cl := &Client{
		network:     o.Network,
		addr:        o.Addr,
		dial:        o.Dial,
		dialTimeout: o.DialTimeout,
		maxIdle:     o.MaxIdle,
		idleTimeout: o.IdleTimeout,
		unsolicited: o.Unsolicited,
	}
	if cl.dial == nil {
		cl.dial = (&net.Dialer{}).DialContext
	}
	if cl.dialTimeout == 0 {
		cl.dialTimeout = DefaultDialTimeout
	}
	if cl.maxIdle == 0 {
		cl.maxIdle = DefaultMaxIdle
	}
	if cl.idleTimeout == 0 {
		cl.idleTimeout = DefaultIdleTimeout
	}
	return cl, nil
}

// Broken reports whether the upstream was found to send bytes outside a
// response: from then on none of its connections is reused.
func (cl *Client) Broken() bool { return cl.broken.Load() }
