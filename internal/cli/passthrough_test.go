package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/sluicehq/sluice/internal/demo"
)

// WebSockets pass through the real binary to an upstream of concurrency 1
// and hold no render slot: with upgrades open a page is still served, and
// /stats shows them apart from the slots; past proxy.maxUpgrades an
// upgrade is refused.
func TestServeWebSocketHoldsNoSlot(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(demo.ReadyPath, func(w http.ResponseWriter, r *http.Request) {})
	mux.Handle("/ws", websocket.Handler(func(c *websocket.Conn) { io.Copy(c, c) }))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page") })
	upstream := &http.Server{Handler: mux}
	go upstream.Serve(ln)
	t.Cleanup(func() { upstream.Close() })

	const open = 3
	addr, adminAddr := freeAddr(t), freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`server: {listen: %q, drainDelay: 100ms}
admin: {listen: %q}
proxy: {maxUpgrades: %d}
upstreams:
  servers: [{address: %q, concurrency: 1}]
  healthCheck: {path: %s, interval: 50ms, timeout: 1s, fails: 1, passes: 1}
`, addr, adminAddr, open, ln.Addr().String(), demo.ReadyPath))
	startSluice(t, "serve", "-c", cfg)
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	waitStats(t, adminAddr, func(s stats) bool { return s.Proxy != nil && s.Proxy.Slots == 1 })

	dial := func() (*websocket.Conn, error) {
		return websocket.Dial("ws://"+addr+"/ws", "", "http://"+addr)
	}
	for i := range open {
		ws, err := dial()
		if err != nil {
			t.Fatalf("websocket %d: %v", i, err)
		}
		t.Cleanup(func() { ws.Close() })
		ws.SetDeadline(time.Now().Add(10 * time.Second))
		msg := fmt.Sprintf("hello %d", i)
		if err := websocket.Message.Send(ws, msg); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := websocket.Message.Receive(ws, &got); err != nil || got != msg {
			t.Fatalf("websocket %d echo: got %q, %v; want %q", i, got, err, msg)
		}
	}
	if code, _, body := get("http://"+addr+"/", 5*time.Second); code != http.StatusOK || body != "page" {
		t.Fatalf("page beside %d websockets: got %d %q, want 200 page", open, code, body)
	}
	st := waitStats(t, adminAddr, func(s stats) bool { return s.Proxy.Upgrades == open })
	if st.Proxy.Outstanding != 0 {
		t.Errorf("slots in use with %d websockets open: got %d, want 0", open, st.Proxy.Outstanding)
	}
	if _, err := dial(); err == nil {
		t.Fatalf("websocket past proxy.maxUpgrades %d: got connected, want 503", open)
	}
	if st := waitStats(t, adminAddr, func(s stats) bool { return true }); st.Proxy.UpgradesRefused != 1 {
		t.Errorf("upgradesRefused: got %d, want 1", st.Proxy.UpgradesRefused)
	}
}

// The Hypernova-style example validates, and, where node is installed,
// serves its worker's render, and the client-render shell with the
// request's props when the render fails, crashes or is too slow.
func TestHypernovaFallbackExample(t *testing.T) {
	dir, err := filepath.Abs("../../examples/hypernova-fallback")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := dispatch(context.Background(), Extensions{}, []string{"validate", "-c", filepath.Join(dir, "sluice.yaml")}, &out, &errOut); code != 0 {
		t.Fatalf("validate: exit %d: %s%s", code, out.String(), errOut.String())
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	addr, adminAddr := freeAddr(t), freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`server: {listen: %q, drainDelay: 100ms}
admin: {listen: %q}
workers: {command: [%q, worker.js], dir: %q, count: 1, concurrency: 1, address: port, readyPath: /healthz, stopTimeout: 2s}
proxy: {timeout: 500ms}
routes:
  - match: {method: GET, pathPrefix: /}
    fallback: {file: %q, props: "query:props", onWorkerError: true}
`, addr, adminAddr, node, dir, filepath.Join(dir, "shell.html")))
	startSluice(t, "serve", "-c", cfg)
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ props, kind, want string }{
		{`{"name":"Ada"}`, "", `data-rendered="server"><h1>Hello, Ada</h1>`},
		{`{"name":"Ada","fail":true}`, "worker-error", `var raw = "{\u0022name\u0022:\u0022Ada\u0022,\u0022fail\u0022:true}";`},
		{`{"name":"Ada","crash":true}`, "bad-gateway", `data-rendered="client"`},
		{`{"name":"</script>","slowMs":2000}`, "timeout", `\u003c\u002fscript\u003e`},
	} {
		code, h, body := get("http://"+addr+"/?props="+url.QueryEscape(tc.props), 10*time.Second)
		if code != http.StatusOK || h.Get("Sluice-Fallback") != tc.kind || !strings.Contains(body, tc.want) {
			t.Errorf("props %s: got %d, Sluice-Fallback %q, body %q; want 200, %q, containing %q", tc.props, code, h.Get("Sluice-Fallback"), body, tc.kind, tc.want)
		}
	}
}
