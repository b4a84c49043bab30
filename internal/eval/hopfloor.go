package eval

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// The floors of scenario hop-cpu's overload measurement: a server with
// nothing behind it that answers every request 503 at once, offered the
// same load as the fronts. Under overload nearly all of a front's answers
// are such 503s, so a floor's CPU is what answering alone costs in that
// server, before any admission, logging or proxying: net/http's for
// sluice, nginx's for nginx -> HAProxy. A front cannot spend less than
// the server it is built on.
const (
	HopFloorGo    = "go-503"    // a bare net/http server (eval shed-server), GOMAXPROCS every CPU
	HopFloorNginx = "nginx-503" // nginx, `return 503`, the suite's nginx settings
)

// FloorReadyPath is the one path the floors answer 200: how the suite
// knows they listen.
const FloorReadyPath = "/__floor/ready"

// ShedFloor is the Go floor's handler: 503 with Retry-After, as a front
// sheds, to everything but FloorReadyPath.
func ShedFloor() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == FloorReadyPath {
			io.WriteString(w, "ready\n")
			return
		}
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "overloaded\n")
	})
}

// floorNginxConfig is nginx's floor: the settings of the suite's nginx
// (configs/nginx.conf.tmpl) that bear on answering, and a 503 for
// everything but FloorReadyPath.
func floorNginxConfig(listen, dir string) []byte {
	return fmt.Appendf(nil, `# The floor of scenario hop-cpu's overload (written by eval/hopfloor.go).
daemon off;
worker_processes auto;
worker_rlimit_nofile 20000;
pid %[2]s/nginx.pid;
error_log %[2]s/nginx-error.log warn;
events {
    worker_connections 16384;
}
http {
    access_log off;
    client_body_temp_path %[2]s/client_body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    keepalive_timeout 65s;
    keepalive_requests 100000;
    server {
        listen %[1]s backlog=4096;
        location = %[3]s {
            default_type text/plain;
            return 200 "ready\n";
        }
        location / {
            default_type text/plain;
            add_header Retry-After 1 always;
            return 503 "overloaded\n";
        }
    }
}
`, listen, dir, FloorReadyPath)
}

// startHopFloors starts the two floors under dir. It returns those it
// started, also on error, for the caller to stop.
func startHopFloors(ctx context.Context, nginxBin, dir string) ([]*hopFront, error) {
	var floors []*hopFront
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	goDir := filepath.Join(dir, HopFloorGo)
	if err := os.MkdirAll(goDir, 0o755); err != nil {
		return nil, err
	}
	f, err := StartSelf(ctx, HopFloorGo, addrs[0], FloorReadyPath, goDir, nil, "shed-server", "-listen", addrs[0])
	if err != nil {
		return nil, fmt.Errorf("eval: hop-cpu: starting %s: %w", HopFloorGo, err)
	}
	floors = append(floors, &hopFront{name: HopFloorGo, front: f, h1: f.URL, h2: f.URL})

	ngDir := filepath.Join(dir, HopFloorNginx)
	if err := os.MkdirAll(ngDir, 0o755); err != nil {
		return floors, err
	}
	path := filepath.Join(ngDir, "nginx.conf")
	if err := os.WriteFile(path, floorNginxConfig(addrs[1], ngDir), 0o644); err != nil {
		return floors, err
	}
	p, err := StartProcess(HopFloorNginx, filepath.Join(ngDir, "nginx.log"), nil, nginxBin, "-p", ngDir, "-c", path)
	if err != nil {
		return floors, fmt.Errorf("eval: hop-cpu: starting %s: %w", HopFloorNginx, err)
	}
	f = &Front{Name: HopFloorNginx, URL: "http://" + addrs[1] + "/", Procs: []*Process{p}}
	floors = append(floors, &hopFront{name: HopFloorNginx, front: f, h1: f.URL, h2: f.URL})
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := WaitStarted(wctx, "http://"+addrs[1]+FloorReadyPath, p); err != nil {
		return floors, fmt.Errorf("eval: hop-cpu: starting %s: %w", HopFloorNginx, err)
	}
	return floors, nil
}
