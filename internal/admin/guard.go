package admin

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// GuardOptions configure Guard. The zero value accepts state-changing
// requests only for a loopback Host, and logs nothing.
type GuardOptions struct {
	// AllowedHosts are the Host names (any case, port ignored; IP
	// addresses too) accepted beside loopback (localhost, 127.0.0.0/8,
	// ::1), which always is; "*" accepts any Host.
	AllowedHosts []string

	// Logger receives each refused request. Nil means none.
	Logger *slog.Logger
}

// Guard wraps the admin listener's handler h so that a request that can
// change state (any method but GET, HEAD and OPTIONS, such as
// POST /workers/restart) is served only when an operator's own tools could
// have sent it; otherwise it gets 403 and h never sees it:
//
//   - its Host must be loopback or in AllowedHosts, so that a DNS
//     rebinding (a hostile name resolving to 127.0.0.1) cannot reach it;
//   - it must not come from another site, by http.CrossOriginProtection:
//     Sec-Fetch-Site cross-site or same-site, or an Origin that is not the
//     Host, so that a web page open on the operator's machine cannot send
//     it. Tools that send neither header (curl, scripts) pass.
//
// Reads (GET, HEAD, OPTIONS: /metrics, /stats, the dashboard) pass
// untouched, so Prometheus can scrape a listener bound beyond loopback by
// its address. Reads of /debug/pprof/ need the Host check too: profiles,
// goroutine stacks and the command line are not for a DNS rebinding page
// to read. Safe for concurrent use.
func Guard(h http.Handler, o GuardOptions) http.Handler {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	anyHost := false
	allowed := make(map[string]bool, len(o.AllowedHosts))
	for _, a := range o.AllowedHosts {
		if a == "*" {
			anyHost = true
		}
		allowed[normalHost(a)] = true
	}
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.Warn("admin: cross-site request refused", "method", r.Method, "path", r.URL.Path,
			"origin", r.Header.Get("Origin"), "fetchSite", r.Header.Get("Sec-Fetch-Site"), "remote", r.RemoteAddr)
		http.Error(w, "admin: cross-site request refused", http.StatusForbidden)
	}))
	guarded := cop.Handler(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		read := false
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			if !strings.HasPrefix(r.URL.Path, pprofPrefix) {
				h.ServeHTTP(w, r)
				return
			}
			read = true
		}
		host := normalHost(r.Host)
		if !anyHost && !loopbackHost(host) && !allowed[host] {
			log.Warn("admin: request for a host not allowed refused", "method", r.Method, "path", r.URL.Path,
				"host", r.Host, "remote", r.RemoteAddr)
			http.Error(w, "admin: host not allowed (see admin.allowedHosts)", http.StatusForbidden)
			return
		}
		if read {
			h.ServeHTTP(w, r)
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// pprofPrefix is where Handler mounts net/http/pprof.
const pprofPrefix = "/debug/pprof/"

// normalHost returns the host of a Host header (or an AllowedHosts entry)
// in lower case, without port, brackets or a trailing dot.
func normalHost(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

func loopbackHost(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true // RFC 6761: always loopback
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}
