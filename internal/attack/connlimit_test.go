package attack

import (
	"net"
	"net/http"
	"testing"
)

const connLimitConfig = `server: {listen: {{listen}}, drainDelay: 0s, maxConnections: 50}
admin: {listen: {{admin}}}
`

// waitNoConns waits until sluice has closed the connection Start's
// readiness check came on: counted while it closes, it took a place, so
// that the limit's last connection was one for probes only, which, sending
// nothing, never gave it back.
func waitNoConns(t *testing.T, s *Sluice) {
	t.Helper()
	s.WaitStats(t, "the readiness check's connection to close", func(st Stats) bool { return st.Conns.Open == 0 })
}

// With server.maxConnections taken by connections that send nothing, the
// health and readiness probes still answer on a new connection; other
// requests there get 503; past the probe reserve connections are refused.
func TestProbesAnswerAtConnectionLimit(t *testing.T) {
	const limit, probeReserve = 50, 64
	s := Start(t, connLimitConfig+DemoWorkers(1))
	waitNoConns(t, s)
	silent := make([]net.Conn, 0, limit+probeReserve)
	for range limit {
		silent = append(silent, Dial(t, s.Addr))
	}
	s.WaitStats(t, "the limit to be reached", func(st Stats) bool { return st.Conns.Open == limit })
	for _, path := range []string{"/__sluice/health", "/__sluice/ready"} {
		c := Dial(t, s.Addr)
		if code, _ := RoundTrip(t, c, "GET "+path+" HTTP/1.1\r\nHost: sluice\r\n\r\n"); code != http.StatusOK {
			t.Errorf("%s at the connection limit: got %d, want 200", path, code)
		}
		c.Close()
	}
	c := Dial(t, s.Addr)
	if code, _ := RoundTrip(t, c, "GET /?cpu=0 HTTP/1.1\r\nHost: sluice\r\n\r\n"); code != http.StatusServiceUnavailable {
		t.Errorf("work at the connection limit: got %d, want 503", code)
	}
	c.Close()
	// The probes' connections hold places in the reserve until sluice has
	// seen them close: filled before, the reserve refused one of its own.
	s.WaitStats(t, "the probes' connections to close", func(st Stats) bool { return st.Conns.ProbeOnly == 0 })
	for range probeReserve {
		silent = append(silent, Dial(t, s.Addr))
	}
	s.WaitStats(t, "the probe reserve to fill", func(st Stats) bool { return st.Conns.ProbeOnly == probeReserve })
	if code, _ := RoundTrip(t, Dial(t, s.Addr), "GET /__sluice/health HTTP/1.1\r\nHost: sluice\r\n\r\n"); code != 0 {
		t.Errorf("past the probe reserve: got %d, want the connection closed unanswered", code)
	}
	if st := s.Stats(t); st.Conns.Refused == 0 {
		t.Errorf("refused connections: got 0, want some")
	}
	for _, c := range silent {
		c.Close()
	}
	s.WaitStats(t, "the connections to close", func(st Stats) bool { return st.Conns.Open == 0 })
	s.Stop(t)
}

// Keep-alive connections parked between pings do not lock work out: at the
// limit a new connection takes the place of the one idle longest.
func TestIdlePingConnectionsAreReclaimed(t *testing.T) {
	const limit = 50
	s := Start(t, connLimitConfig+DemoWorkers(1))
	waitNoConns(t, s)
	parked := make([]net.Conn, limit)
	for i := range parked {
		parked[i] = Dial(t, s.Addr)
		if code, _ := RoundTrip(t, parked[i], "GET /ping HTTP/1.1\r\nHost: sluice\r\n\r\n"); code != http.StatusOK {
			t.Fatalf("ping %d: got %d, want 200", i, code)
		}
	}
	s.WaitStats(t, "every parked connection to be idle", func(st Stats) bool { return st.Conns.Idle == limit })
	for i := range 5 {
		if code, _ := RoundTrip(t, Dial(t, s.Addr), "GET /?cpu=0 HTTP/1.1\r\nHost: sluice\r\n\r\n"); code != http.StatusOK {
			t.Errorf("work %d with the limit held by idle pings: got %d, want 200", i, code)
		}
	}
	st := s.WaitStats(t, "the reclaims to count", func(st Stats) bool { return st.Conns.Reclaimed >= 5 })
	if st.Conns.Refused != 0 {
		t.Errorf("refused: got %d, want 0", st.Conns.Refused)
	}
	for _, c := range parked {
		c.Close()
	}
	s.Stop(t)
}
