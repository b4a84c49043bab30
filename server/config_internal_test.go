package server

import (
	"net"
	"testing"
	"time"
)

// The zero Server gets the documented defaults, and they reach net/http as
// documented: there is no WriteTimeout.
func TestDefaults(t *testing.T) {
	var s Server
	c := s.config()
	hs := s.httpServer(c, &runState{})
	tests := []struct {
		name      string
		got, want any
	}{
		{"KeepAliveTimeout", c.keepAlive, 65 * time.Second},
		{"RequestTimeout", c.request, 30 * time.Second},
		{"HeadersTimeout capped by RequestTimeout", c.headers, 30 * time.Second},
		{"ShutdownTimeout", c.shutdown, 25 * time.Second},
		{"DrainDelay", c.drainDelay, 5 * time.Second},
		{"MaxHeaderBytes", c.maxHeaderBytes, 64 << 10},
		{"MaxConnections", c.maxConns, 10000},
		{"HealthPath", c.health, "/__sluice/health"},
		{"ReadyPath", c.ready, "/__sluice/ready"},
		{"http IdleTimeout", hs.IdleTimeout, 65 * time.Second},
		{"http ReadHeaderTimeout", hs.ReadHeaderTimeout, 30 * time.Second},
		{"http ReadTimeout", hs.ReadTimeout, 30 * time.Second},
		{"http WriteTimeout", hs.WriteTimeout, time.Duration(0)},
		{"http MaxHeaderBytes", hs.MaxHeaderBytes, 64 << 10},
		{"HTTP/1", hs.Protocols.HTTP1(), true},
		{"HTTP/2", hs.Protocols.HTTP2(), true},
		{"h2c", hs.Protocols.UnencryptedHTTP2(), false},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if c.log == nil {
		t.Error("nil Logger: got a nil logger, want one that discards")
	}
}

// Negative values switch a bound off; what that means for net/http's
// fields, where zero would fall back to ReadTimeout.
func TestNegativeValues(t *testing.T) {
	type want struct {
		idle, header, read time.Duration
		maxHeaderBytes     int
	}
	tests := []struct {
		name string
		s    *Server
		want want
	}{
		{
			name: "all off",
			s:    &Server{KeepAliveTimeout: -1, HeadersTimeout: -1, RequestTimeout: -1, MaxHeaderBytes: -1},
			want: want{-1, -1, 0, 0},
		},
		{
			name: "headers bound only",
			s:    &Server{HeadersTimeout: 2 * time.Second, RequestTimeout: -1},
			want: want{DefaultKeepAliveTimeout, 2 * time.Second, 0, DefaultMaxHeaderBytes},
		},
		{
			name: "no headers bound of its own",
			s:    &Server{HeadersTimeout: -1, RequestTimeout: 4 * time.Second},
			want: want{DefaultKeepAliveTimeout, 4 * time.Second, 4 * time.Second, DefaultMaxHeaderBytes},
		},
		{
			name: "headers shorter than the request",
			s:    &Server{HeadersTimeout: time.Second, RequestTimeout: 4 * time.Second},
			want: want{DefaultKeepAliveTimeout, time.Second, 4 * time.Second, DefaultMaxHeaderBytes},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hs := tc.s.httpServer(tc.s.config(), &runState{})
			got := want{hs.IdleTimeout, hs.ReadHeaderTimeout, hs.ReadTimeout, hs.MaxHeaderBytes}
			if got != tc.want {
				t.Errorf("got IdleTimeout, ReadHeaderTimeout, ReadTimeout, MaxHeaderBytes %v; want %v", got, tc.want)
			}
		})
	}
	s := Server{ShutdownTimeout: -1, DrainDelay: -1, MaxConnections: -1}
	if c := s.config(); c.shutdown > 0 || c.drainDelay > 0 || c.maxConns > 0 {
		t.Errorf("got shutdown %v, drain delay %v, max connections %d; want none positive", c.shutdown, c.drainDelay, c.maxConns)
	}
}

// fakeListener accepts n pipe connections, then fails.
type fakeListener struct{ n int }

func (l *fakeListener) Accept() (net.Conn, error) {
	if l.n == 0 {
		return nil, net.ErrClosed
	}
	l.n--
	c, _ := net.Pipe()
	return c, nil
}
func (l *fakeListener) Close() error   { return nil }
func (l *fakeListener) Addr() net.Addr { return nil }

func TestLimitListener(t *testing.T) {
	tests := []struct {
		max                  int64
		wantOpen, wantRefuse int64
	}{
		{max: -1, wantOpen: 5},
		{max: 3, wantOpen: 3, wantRefuse: 2},
		{max: 5, wantOpen: 5},
	}
	for _, tc := range tests {
		var counts connCounter
		l := &limitListener{Listener: &fakeListener{n: 5}, max: tc.max, conns: &counts, log: (&Server{}).config().log}
		var accepted []net.Conn
		for {
			c, err := l.Accept()
			if err != nil {
				break
			}
			accepted = append(accepted, c)
		}
		if counts.open.Load() != tc.wantOpen || int64(counts.refused.Load()) != tc.wantRefuse || int64(len(accepted)) != tc.wantOpen {
			t.Errorf("max %d: got %d accepted, %d open, %d refused; want %d open, %d refused",
				tc.max, len(accepted), counts.open.Load(), counts.refused.Load(), tc.wantOpen, tc.wantRefuse)
		}
		for _, c := range accepted {
			c.Close()
			c.Close() // counted once
		}
		if got := counts.open.Load(); got != 0 {
			t.Errorf("max %d: open after closing all: got %d, want 0", tc.max, got)
		}
	}
}
