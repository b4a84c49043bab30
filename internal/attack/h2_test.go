package attack

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Client speaks raw HTTP/2 without TLS (prior knowledge) to sluice with
// server.h2c on, so that a test can do what no well-behaved client does.
type h2Client struct {
	t  *testing.T
	c  net.Conn
	mu sync.Mutex // guards fr's writes
	fr *http2.Framer

	done chan struct{} // closed when the read loop ends

	smu       sync.Mutex
	responses int // HEADERS frames received
	resets    map[http2.ErrCode]int
	goAway    bool
}

// dialH2 opens a connection, sends the preface and settings, and starts
// reading frames (settings acknowledged, the rest counted).
func dialH2(t *testing.T, addr string, settings ...http2.Setting) *h2Client {
	t.Helper()
	c := Dial(t, addr)
	h := &h2Client{t: t, c: c, fr: http2.NewFramer(c, c), done: make(chan struct{}), resets: map[http2.ErrCode]int{}}
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := h.write(func(fr *http2.Framer) error { return fr.WriteSettings(settings...) }); err != nil {
		t.Fatal(err)
	}
	go h.read()
	return h
}

// write writes frames; an error means sluice closed the connection.
func (h *h2Client) write(f func(*http2.Framer) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.c.SetWriteDeadline(time.Now().Add(bound))
	return f(h.fr)
}

func (h *h2Client) read() {
	defer close(h.done)
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			return
		}
		h.smu.Lock()
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				go h.write(func(fr *http2.Framer) error { return fr.WriteSettingsAck() })
			}
		case *http2.HeadersFrame:
			h.responses++
		case *http2.RSTStreamFrame:
			h.resets[f.ErrCode]++
		case *http2.GoAwayFrame:
			h.goAway = true
		}
		h.smu.Unlock()
	}
}

// request opens stream id with GET path, the request complete.
func (h *h2Client) request(id uint32, path string) error {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: "sluice"}, {Name: ":path", Value: path},
	} {
		enc.WriteField(f)
	}
	return h.write(func(fr *http2.Framer) error {
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: buf.Bytes(), EndStream: true, EndHeaders: true})
	})
}

// counts returns the responses and resets (by code) seen so far.
func (h *h2Client) counts() (responses int, resets map[http2.ErrCode]int, goAway bool) {
	h.smu.Lock()
	defer h.smu.Unlock()
	r := make(map[http2.ErrCode]int, len(h.resets))
	for k, v := range h.resets {
		r[k] = v
	}
	return h.responses, r, h.goAway
}

// waitFor polls the counts until cond holds, failing after bound.
func (h *h2Client) waitFor(what string, cond func(responses int, resets map[http2.ErrCode]int, goAway bool) bool) {
	h.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		r, rs, g := h.counts()
		if cond(r, rs, g) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("HTTP/2: waiting for %s: not within %v (responses %d, resets %v, GOAWAY %v)", what, bound, r, rs, g)
		}
		time.Sleep(10 * time.Millisecond) // polling the read loop
	}
}

// A client opening 1,000 streams at once on one connection gets at most
// server.MaxConcurrentStreams (100) of them: the rest are reset unserved,
// and sluice's goroutines and admission queue stay bounded.
func TestHTTP2ManyStreamsBounded(t *testing.T) {
	const streams, maxStreams = 1000, 100
	s := Start(t, `server: {listen: {{listen}}, drainDelay: 0s, h2c: true}
admin: {listen: {{admin}}, pprof: true}
`+DemoWorkers(1))
	before := s.Goroutines(t)
	h := dialH2(t, s.Addr)
	// Each render takes 2 s, longer than sending every stream: none is
	// answered before the last is open.
	sent := 0
	for i := range streams {
		if h.request(uint32(2*i+1), "/?cpu=0&sleep=2000") != nil {
			break // sluice closed the connection
		}
		sent++
	}
	// Every stream is either answered or reset, or the connection is
	// closed with GOAWAY.
	peak := 0
	h.waitFor("every stream to be settled", func(responses int, resets map[http2.ErrCode]int, goAway bool) bool {
		if g := s.Goroutines(t); g > peak {
			peak = g
		}
		n := responses
		for _, v := range resets {
			n += v
		}
		return n >= sent || goAway
	})
	responses, resets, goAway := h.counts()
	t.Logf("%d streams sent of %d: %d answered, resets %v, GOAWAY %v; goroutines %d before, peak %d", sent, streams, responses, resets, goAway, before, peak)
	if responses > maxStreams {
		t.Errorf("answered streams: got %d, want at most %d", responses, maxStreams)
	}
	// A handler goroutine per open stream, and net/http's own few.
	if most := before + 2*maxStreams + 50; peak > most {
		t.Errorf("peak goroutines: got %d, want at most %d", peak, most)
	}
	h.c.Close()
	<-h.done
	if code, _ := testutil.Get(t.Context(), "http://"+s.Addr+"/?cpu=0"); code != http.StatusOK {
		t.Errorf("a request after the attack: got %d, want 200", code)
	}
	s.Stop(t)
}

// A client that opens no flow-control window (SETTINGS_INITIAL_WINDOW_SIZE
// 0) for a large response is a slow reader too: its stream is reset after
// server.sendTimeout, and the worker's connection closed then, its slot
// freed.
func TestHTTP2ZeroWindowIsCut(t *testing.T) {
	const size = 64 << 20 // more than the kernel's buffers hold
	finished := make(chan error, 1)
	s := Start(t, slowReaderConfig(Upstream(t, bigUpstream(size, finished), 1)))
	h := dialH2(t, s.Addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	if err := h.request(1, "/big"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-finished:
		if err == nil {
			t.Errorf("the worker's whole response was taken for a client with no window, want its connection closed")
		}
	case <-time.After(bound):
		t.Fatalf("the worker is still held by a client with no window, %v later", bound)
	}
	h.waitFor("the stream to be reset", func(_ int, resets map[http2.ErrCode]int, goAway bool) bool {
		return len(resets) > 0 || goAway
	})
	s.WaitStats(t, "the slot to be freed", func(st Stats) bool { return st.Proxy.Outstanding == 0 })
	h.c.Close()
	<-h.done
	s.Stop(t)
}

// Streams with no flow-control window hold no render slot past
// proxy.streamHold: with as many of them as the worker has slots, another
// client's request is answered while they are still stalled (the attack
// trial's eight zero-window streams held all eight slots until
// sendTimeout).
func TestHTTP2ZeroWindowStreamsHoldNoSlot(t *testing.T) {
	const size, streams = 64 << 20, 4
	finished := make(chan error, streams)
	s := Start(t, `server: {listen: {{listen}}, drainDelay: 0s, sendTimeout: 60s, h2c: true}
admin: {listen: {{admin}}}
proxy: {bufferResponseBytes: 64KiB, streamHold: 1s}
`+Upstream(t, bigUpstream(size, finished), streams))
	h := dialH2(t, s.Addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	for i := range streams {
		if err := h.request(uint32(2*i+1), "/big"); err != nil {
			t.Fatal(err)
		}
	}
	h.waitFor("the streams' headers", func(responses int, _ map[http2.ErrCode]int, _ bool) bool { return responses == streams })
	st := s.WaitStats(t, "the stalled streams to leave their slots", func(st Stats) bool { return st.Proxy.Outstanding == 0 })
	if n, _ := st.Raw["proxy"].(map[string]any)["streams"].(float64); n != streams {
		t.Errorf("streams holding no slot: got %v, want %d", n, streams)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if code, _ := testutil.Get(ctx, "http://"+s.Addr+"/small"); code != http.StatusOK {
		t.Errorf("another client beside %d stalled streams: got %d, want 200", streams, code)
	}
	h.c.Close()
	<-h.done
	for range streams {
		<-finished // the worker's writes fail once sluice closes its connections
	}
	s.WaitStats(t, "the streams to end", func(st Stats) bool { n, _ := st.Raw["proxy"].(map[string]any)["streams"].(float64); return n == 0 })
	s.Stop(t)
}
