package attack

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// adminWorkerPIDs reads the supervised workers' process ids from /stats.
func adminWorkerPIDs(t *testing.T, st Stats) []int {
	t.Helper()
	ws, _ := st.Raw["workers"].([]any)
	var pids []int
	for _, w := range ws {
		m, _ := w.(map[string]any)
		if pid, ok := m["pid"].(float64); ok {
			pids = append(pids, int(pid))
		}
	}
	return pids
}

// A cross-site POST /workers/restart (a web page open on the operator's
// machine) and one for a foreign Host (a DNS rebinding) get 403 and
// restart nothing; the same request from a local tool restarts the pool.
func TestAdminRestartRefusesCrossSiteAndForeignHost(t *testing.T) {
	s := Start(t, "server: {listen: {{listen}}, drainDelay: 0s}\nadmin: {listen: {{admin}}}\n"+DemoWorkers(1))
	before := adminWorkerPIDs(t, s.WaitStats(t, "a worker with a pid", func(st Stats) bool {
		return len(adminWorkerPIDs(t, st)) == 1
	}))
	for _, tt := range []struct {
		name string
		raw  string
	}{
		{"cross-site", "POST /workers/restart HTTP/1.1\r\nHost: " + s.Admin + "\r\nOrigin: http://evil.example\r\nSec-Fetch-Site: cross-site\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
		{"foreign Origin", "POST /workers/restart HTTP/1.1\r\nHost: " + s.Admin + "\r\nOrigin: http://evil.example\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
		{"foreign Host", "POST /workers/restart HTTP/1.1\r\nHost: evil.example:9090\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
		{"foreign Host, same-origin by its own account", "POST /workers/restart HTTP/1.1\r\nHost: rebind.evil.example\r\nOrigin: http://rebind.evil.example\r\nSec-Fetch-Site: same-origin\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := Dial(t, s.Admin)
			if code, _ := RoundTrip(t, c, tt.raw); code != http.StatusForbidden {
				t.Errorf("got %d, want 403", code)
			}
			c.Close()
		})
	}
	// Reads still work from anywhere: a scraper's Host is not loopback.
	c := Dial(t, s.Admin)
	if code, _ := RoundTrip(t, c, "GET /metrics HTTP/1.1\r\nHost: 10.0.0.5:9090\r\nConnection: close\r\n\r\n"); code != http.StatusOK {
		t.Errorf("GET /metrics for a LAN Host: got %d, want 200", code)
	}
	c.Close()

	// Nothing restarted: the refused requests are gone, and a restart that
	// is allowed (below) does replace the worker, so this is no accident of
	// timing. The allowed one is the control: it must change the pid.
	if got := adminWorkerPIDs(t, s.Stats(t)); len(got) != 1 || got[0] != before[0] {
		t.Fatalf("workers after the refused requests: got pids %v, want %v", got, before)
	}
	req, _ := http.NewRequestWithContext(context.Background(), "POST", "http://"+s.Admin+"/workers/restart", nil)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a local POST /workers/restart: got %d, want 202", resp.StatusCode)
	}
	s.WaitStats(t, "the worker replaced by the allowed restart", func(st Stats) bool {
		p := adminWorkerPIDs(t, st)
		return len(p) == 1 && p[0] != before[0]
	})
	// A restart a refused request had started would have begun before the
	// allowed one, so it would be in the log by now.
	if n := strings.Count(s.Output(1<<20), "rolling restart requested"); n != 1 {
		t.Errorf("got %d rolling restarts in sluice's log, want 1 (the allowed one)", n)
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	s.Stop(t)
}
