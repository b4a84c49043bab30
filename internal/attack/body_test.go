package attack

import (
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/internal/testutil"
)

// maxRSS bounds sluice's peak resident memory in the memory attacks: a
// few times its idle footprint, and far below the gigabytes they cost a
// front that holds what they send in memory.
const maxRSS = 128 << 20

func bodyConfig(extra string) string {
	return `server: {listen: {{listen}}, drainDelay: 0s}
admin: {listen: {{admin}}}
` + extra + DemoWorkers(1)
}

// post is a request declaring a body of n bytes and sending one.
func post(n int64) string {
	return "POST /?cpu=0 HTTP/1.1\r\nHost: sluice\r\nContent-Length: " + strconv.FormatInt(n, 10) + "\r\n\r\nx"
}

// A 60-byte request declaring a terabyte, with no body limit of its own,
// is answered 413 unread: the process survives, its memory untouched.
func TestHugeDeclaredContentLength(t *testing.T) {
	requireLinux(t)
	for _, proxyCfg := range []string{"proxy: {maxBodyBytes: 0}\n", ""} {
		t.Run("config "+strconv.Quote(proxyCfg), func(t *testing.T) {
			s := Start(t, bodyConfig(proxyCfg))
			for range 3 {
				if code, _ := RoundTrip(t, Dial(t, s.Addr), post(1_000_000_000_000)); code != http.StatusRequestEntityTooLarge {
					t.Errorf("declared 1 TB: got %d, want 413", code)
				}
			}
			if code, _ := testutil.Get(t.Context(), "http://"+s.Addr+"/__sluice/health"); code != http.StatusOK || !s.Alive() {
				t.Fatalf("after the attack: health %d, alive %v; want 200 and alive", code, s.Alive())
			}
			if m := s.Memory(t); m.Peak > maxRSS {
				t.Errorf("peak RSS: got %d MiB, want at most %d MiB", m.Peak>>20, maxRSS>>20)
			}
			s.Stop(t)
		})
	}
}

// 320 connections each declaring 10 MB and sending one byte hold what
// arrived (4 KiB each), not what was declared (3.2 GB), and requests keep
// being served meanwhile.
func TestTrickledBodiesHoldOnlyWhatArrived(t *testing.T) {
	requireLinux(t)
	const conns = 320
	s := Start(t, bodyConfig(""))
	cs := make([]net.Conn, conns)
	for i := range cs {
		cs[i] = Dial(t, s.Addr)
		if _, err := cs[i].Write([]byte(post(10 << 20))); err != nil {
			t.Fatal(err)
		}
	}
	st := s.WaitStats(t, "every trickled body to be held", func(st Stats) bool {
		return st.Proxy.BufferedBytes >= conns*4<<10
	})
	if most := int64(conns * 4 << 10); st.Proxy.BufferedBytes > most+1<<20 {
		t.Errorf("buffered: got %d bytes, want about %d", st.Proxy.BufferedBytes, most)
	}
	if code, _ := testutil.Get(t.Context(), "http://"+s.Addr+"/?cpu=0"); code != http.StatusOK {
		t.Errorf("a GET during the attack: got %d, want 200", code)
	}
	m := s.Memory(t)
	t.Logf("%d trickled bodies: %d KiB buffered, RSS %d MiB, peak %d MiB", conns, st.Proxy.BufferedBytes>>10, m.RSS>>20, m.Peak>>20)
	if m.Peak > maxRSS {
		t.Errorf("peak RSS with %d trickled 10 MB bodies: got %d MiB, want at most %d MiB", conns, m.Peak>>20, maxRSS>>20)
	}
	for _, c := range cs {
		c.Close()
	}
	s.WaitStats(t, "the bodies' memory to come back", func(st Stats) bool { return st.Proxy.BufferedBytes == 0 })
	s.Stop(t)
}

// Past proxy.maxBufferedBytes a new upload gets 503 and nothing else is
// hurt: requests without a body are served, and uploads succeed again once
// the memory is back.
func TestUploadsPastBudget(t *testing.T) {
	requireLinux(t)
	const conns, budget = 300, 1 << 20
	s := Start(t, bodyConfig("proxy: {maxBufferedBytes: 1MiB}\n"))
	cs := make([]net.Conn, conns)
	for i := range cs {
		cs[i] = Dial(t, s.Addr)
		if _, err := cs[i].Write([]byte(post(512 << 10))); err != nil {
			t.Fatal(err)
		}
	}
	// Each trickled body holds 4 KiB: 256 fit, the other 44 get 503.
	s.WaitStats(t, "the budget to fill", func(st Stats) bool {
		return st.Proxy.BufferedBytes == budget && st.Proxy.BodyNoMemory == conns-budget/(4<<10)
	})
	c := Dial(t, s.Addr)
	if code, h := RoundTrip(t, c, "POST /?cpu=0 HTTP/1.1\r\nHost: sluice\r\nContent-Length: 5\r\n\r\nhello"); code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Errorf("an upload at the budget: got %d (Retry-After %q), want 503 with Retry-After", code, h.Get("Retry-After"))
	}
	if code, _ := testutil.Get(t.Context(), "http://"+s.Addr+"/?cpu=0"); code != http.StatusOK {
		t.Errorf("a GET at the budget: got %d, want 200", code)
	}
	for _, c := range cs {
		c.Close()
	}
	s.WaitStats(t, "the memory to come back", func(st Stats) bool { return st.Proxy.BufferedBytes == 0 })
	if code, _ := RoundTrip(t, Dial(t, s.Addr), "POST /?cpu=0 HTTP/1.1\r\nHost: sluice\r\nContent-Length: 5\r\n\r\nhello"); code != http.StatusOK {
		t.Errorf("an upload after the attack: got %d, want 200", code)
	}
	s.Stop(t)
}
