package attack

import (
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"golang.org/x/net/http2"
)

// A flood of HTTP/2 SETTINGS frames on one connection is not bounded by
// Go's HTTP/2 server (it acknowledges them through a flag, never counts
// them: docs/operations.md); this measures what it costs sluice, and
// checks what must hold anyway: sluice keeps serving other clients, and
// its memory does not grow with the frames. The figure it logs is the
// operations guide's:
//
//	go test ./internal/attack/ -run TestHTTP2SettingsFlood -v
func TestHTTP2SettingsFlood(t *testing.T) {
	requireLinux(t)
	const frames = 200_000
	s := Start(t, "server: {listen: {{listen}}, drainDelay: 0s, h2c: true}\nadmin: {listen: {{admin}}}\n"+DemoWorkers(1))
	before, cpu0 := s.Memory(t), cpuSeconds(t, s.PID)
	c := Dial(t, s.Addr)
	c.SetDeadline(time.Now().Add(bound))
	fr := http2.NewFramer(c, c)
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	goAway := make(chan http2.ErrCode, 1)
	pong := make(chan struct{})
	go func() { // read and drop the acknowledgements, as a flooding client that reads would
		defer close(pong)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.GoAwayFrame:
				goAway <- f.ErrCode
				return
			case *http2.PingFrame:
				if f.IsAck() {
					return
				}
			}
		}
	}()
	start := time.Now()
	sent := 0
	for range frames {
		if err := fr.WriteSettings(); err != nil {
			break // sluice closed the connection
		}
		sent++
	}
	// Frames are handled in order: the PING's acknowledgement comes once
	// every SETTINGS frame before it has been.
	if err := fr.WritePing(false, [8]byte{1}); err == nil {
		<-pong
	}
	elapsed := time.Since(start)
	if code, _ := testutil.Get(t.Context(), "http://"+s.Addr+"/?cpu=0"); code != http.StatusOK {
		t.Errorf("another client during the flood: got %d, want 200", code)
	}
	cpu := cpuSeconds(t, s.PID) - cpu0
	after := s.Memory(t)
	var code string
	select {
	case g := <-goAway:
		code = g.String()
	default:
		code = "none"
	}
	t.Logf("%d SETTINGS frames sent of %d in %v: sluice used %.2f CPU-s (%.1f µs a frame), GOAWAY %s; RSS %d -> %d KiB",
		sent, frames, elapsed.Round(time.Millisecond), cpu, 1e6*cpu/float64(max(sent, 1)), code, before.RSS>>10, after.RSS>>10)
	if grew := after.RSS - before.RSS; grew > 32<<20 {
		t.Errorf("RSS grew by %d MiB over the flood, want it bounded", grew>>20)
	}
	c.Close()
	s.Stop(t)
}

// cpuSeconds is the CPU time process pid has used (user and system), from
// /proc/PID/stat, at the kernel's usual 100 ticks a second.
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: count after it.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100
}
