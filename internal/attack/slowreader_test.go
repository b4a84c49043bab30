package attack

import (
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// bigUpstream answers /big with size bytes and reports on finished when
// its handler returns: the error of its last write, nil when the whole
// response was taken.
func bigUpstream(size int, finished chan<- error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		buf := make([]byte, 32<<10)
		var err error
		for n := 0; n < size && err == nil; n += len(buf) {
			_, err = w.Write(buf)
		}
		finished <- err
	})
}

func slowReaderConfig(upstream string) string {
	return `server: {listen: {{listen}}, drainDelay: 0s, sendTimeout: 1s, h2c: true}
admin: {listen: {{admin}}}
proxy: {bufferResponseBytes: 64KiB}
` + upstream
}

// A client that requests a large response (a stream: longer than
// bufferResponseBytes) and reads none of it is cut after
// server.sendTimeout; the worker's connection is closed then, at once (its
// write fails), and its slot freed, rather than the rest of the response
// being read for nobody.
func TestSlowReaderIsCutAndSlotFreed(t *testing.T) {
	const size = 64 << 20
	finished := make(chan error, 1)
	s := Start(t, slowReaderConfig(Upstream(t, bigUpstream(size, finished), 1)))
	c := Dial(t, s.Addr)
	if _, err := io.WriteString(c, "GET /big HTTP/1.1\r\nHost: sluice\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case err := <-finished:
		if err == nil {
			t.Errorf("the worker's whole response was taken for a client that read none of it, want its connection closed")
		}
	case <-time.After(bound):
		t.Fatalf("the worker is still held by a client that reads nothing, %v later", bound)
	}
	t.Logf("worker stopped %v after the request", time.Since(start).Round(time.Millisecond))
	st := s.WaitStats(t, "the slot to be freed", func(st Stats) bool { return st.Proxy.Outstanding == 0 })
	if cut, _ := st.Raw["proxy"].(map[string]any)["streamsCut"].(float64); cut != 1 {
		t.Errorf("streams cut: got %v, want 1", cut)
	}
	// The client was cut: what it can still read ends early.
	c.SetReadDeadline(time.Now().Add(bound))
	n, _ := io.Copy(io.Discard, c)
	if n >= size {
		t.Errorf("the stalled client could still read %d bytes, want the connection cut short of %d", n, size)
	}
	c.Close()
	if code, _ := testutil.Get(t.Context(), "http://"+s.Addr+"/small"); code != http.StatusOK {
		t.Errorf("the next request: got %d, want 200", code)
	}
	s.Stop(t)
}
