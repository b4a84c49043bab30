// Package config is the schema of sluice.yaml: the Go structs the file
// decodes into, their defaults, and the checks that reject a bad file before
// anything starts.
//
// The package only parses, applies defaults and validates. Of sluice's
// packages it imports only admission, for the names of its priority classes;
// the serve command maps these structs onto the options of the
// packages that do the work (admission, server, proxy, supervisor).
//
// # The file
//
// Keys are camelCase and reuse the option names of the Node.js server sluice
// replaces (server.keepAliveTimeout, server.backpressure.queueSize, ...), so
// that its configuration carries over. A key left
// out keeps its default; a key set to null (written with no value) does too.
// Durations are Go duration strings ("65s", "1m5s", "250ms") or a bare
// number of milliseconds (65000), as that server reads them. Sizes are a whole number of
// bytes or a string with a unit ("64KiB", "10MiB", "1.5MB"; KB, MB and GB are
// powers of 1000, KiB, MiB and GiB powers of 1024).
//
// Every problem is reported, not only the first, each naming the file, the
// line and the key's dotted path:
//
//	sluice.yaml:12: server.backpressure.minLimit: 50 is greater than maxLimit (10)
//
// Parsing never panics, whatever the input (a fuzz target checks it).
//
// # The structs
//
// Config and everything in it are plain values: not safe for concurrent
// mutation, safe to share once nobody writes them. Default returns the
// built-in configuration; a file overrides only what it sets. Optional
// sections (Workers, Upstreams, a route's Fallback) are nil when absent.
package config

import (
	"net/netip"
	"time"

	"github.com/sluicehq/sluice/admission"
)

// Config is the whole of sluice.yaml. The zero value is not a usable
// configuration: start from Default (or Parse, which does).
type Config struct {
	// Server is the front listener: timeouts, limits, health, drain.
	Server Server `yaml:"server"`
	// Admin is the admin listener: metrics, stats, dashboard, pprof.
	Admin Admin `yaml:"admin"`
	// Workers are the processes sluice starts and supervises; nil when the
	// file has no workers section. Exclusive with Upstreams.
	Workers *Workers `yaml:"workers" mode:"front"`
	// Upstreams are servers sluice forwards to but does not start; nil when
	// the file has no upstreams section. Exclusive with Workers.
	Upstreams *Upstreams `yaml:"upstreams" mode:"front"`
	// Proxy is how requests are relayed to workers or upstreams.
	Proxy Proxy `yaml:"proxy"`
	// Overload tunes the admission queue's discipline under overload.
	Overload Overload `yaml:"overload"`
	// Tenants says how requests are grouped for fair sharing.
	Tenants Tenants `yaml:"tenants"`
	// Routes classify requests; the first whose Match matches wins. A
	// request no route matches is critical, of cost 1, with proxy.timeout.
	Routes []Route `yaml:"routes" reload:"live"`
	// Compression compresses responses (gzip, brotli) at the front.
	Compression Compression `yaml:"compression" reload:"live"`
}

// FrontMode reports whether c fronts workers or upstreams. Otherwise sluice
// is in library mode: it serves its embedded app in-process behind the
// admission controller, as a Go service using the library would.
func (c *Config) FrontMode() bool { return c.Workers != nil || c.Upstreams != nil }

// Server configures the main listener.
type Server struct {
	// Listen is the address to listen on, host:port (":3000" = every
	// interface).
	Listen string `yaml:"listen"`
	// TLS enables HTTPS (with HTTP/2 by ALPN) when both files are set.
	TLS TLS `yaml:"tls"`
	// H2C serves HTTP/2 without TLS (prior knowledge; not Upgrade: h2c) beside
	// HTTP/1.1. Only without TLS.
	H2C bool `yaml:"h2c"`
	// KeepAliveTimeout is how long an idle keep-alive connection waits for
	// its next request (http.Server.IdleTimeout). 0 = no limit.
	KeepAliveTimeout time.Duration `yaml:"keepAliveTimeout"`
	// HeadersTimeout is how long reading a request's headers may take
	// (http.Server.ReadHeaderTimeout). It need not exceed KeepAliveTimeout:
	// in net/http the idle wait and the header read are sequential phases.
	// A shorter RequestTimeout caps it. 0 = no limit.
	HeadersTimeout time.Duration `yaml:"headersTimeout"`
	// RequestTimeout is how long reading the whole request, headers and body,
	// may take (http.Server.ReadTimeout). 0 = no limit.
	RequestTimeout time.Duration `yaml:"requestTimeout"`
	// ShutdownTimeout is the whole drain budget from the signal to exit;
	// what is still running then is cut. Must be > 0.
	ShutdownTimeout time.Duration `yaml:"shutdownTimeout"`
	// DrainDelay is how long readiness reports 503 before the listener stops
	// accepting, so load balancers notice. Shorter than ShutdownTimeout.
	DrainDelay time.Duration `yaml:"drainDelay"`
	// MaxConcurrentRequests is the hard ceiling of the concurrency limit,
	// whatever the adaptive algorithm says. 0 = no ceiling beyond
	// Backpressure.MaxLimit (and, with backpressure disabled, no limit).
	MaxConcurrentRequests int `yaml:"maxConcurrentRequests" reload:"live"`
	// MaxHeaderBytes bounds the request line and headers; above it the
	// request gets 431 (http.Server.MaxHeaderBytes). Must be > 0.
	MaxHeaderBytes int64 `yaml:"maxHeaderBytes" form:"size"`
	// MaxConnections bounds the open client connections. At the bound a
	// new connection replaces the one idle longest; with none idle it may
	// only ask the probes (a few dozen such), and beyond those it is closed
	// at once, before anything is read. 0 = unlimited.
	MaxConnections int `yaml:"maxConnections"`
	// Procs is how many CPUs sluice's own Go runtime runs on at once
	// (GOMAXPROCS). 0, the default: every usable CPU. Fewer leave more to
	// workers on the same machine (one P spends a quarter less CPU per
	// request: no idle P to wake at each hand-off) but make a dispatch
	// wait behind the front's other work, which cost CPU-bound renderers
	// goodput under heavy overload. The GOMAXPROCS environment variable,
	// when set, wins.
	Procs int `yaml:"procs"`
	// SendTimeout is how long a client may take no byte of its response
	// before it is cut (each write, not the whole response: streams live
	// as long as they move). 0 = no limit.
	SendTimeout time.Duration `yaml:"sendTimeout"`
	// HealthPath answers liveness: 200 while the process can serve at all.
	HealthPath string `yaml:"healthPath"`
	// ReadyPath answers readiness: 200 only while accepting work.
	ReadyPath string `yaml:"readyPath"`
	// TrustedPeers are the client networks whose Sluice-Priority,
	// Sluice-Tenant and Sluice-Timeout headers are believed (and passed to
	// workers; from anyone else every Sluice-* header is removed). In the
	// file: CIDRs or bare IPs (a bare IP is a /32 or /128). Empty = nobody.
	TrustedPeers []netip.Prefix `yaml:"trustedPeers" reload:"live"`
	// TrustedProxies are the client networks (load balancers, reverse
	// proxies) whose X-Forwarded-For is believed for the client's address,
	// and whose X-Forwarded-Proto, X-Forwarded-Host, Forwarded and
	// X-Real-IP are passed to workers. From anyone else those are removed
	// and X-Forwarded-For is the connection's address alone. Same form as
	// TrustedPeers. Empty = nobody.
	TrustedProxies []netip.Prefix `yaml:"trustedProxies" reload:"live"`
	// AccessLog logs one line per request.
	AccessLog bool `yaml:"accessLog" reload:"live"`
	// ServerTiming adds a Server-Timing header (queue wait, worker time)
	// to every response. Off by default: it tells any client how loaded
	// sluice is.
	ServerTiming bool `yaml:"serverTiming" reload:"live"`
	// GenerateTraceparent gives a request that arrives without a valid
	// W3C traceparent one whose trace id is the request's ID, so that the
	// access log line and the worker's spans share a trace id.
	GenerateTraceparent bool `yaml:"generateTraceparent" reload:"live"`
	// Backpressure is the adaptive concurrency limit and its queue.
	Backpressure Backpressure `yaml:"backpressure"`
}

// TLS names the certificate and key, PEM files. Both or neither.
type TLS struct {
	CertFile string `yaml:"certFile" reload:"live"`
	KeyFile  string `yaml:"keyFile" reload:"live"`
}

// Enabled reports whether TLS is configured (both files set).
func (t TLS) Enabled() bool { return t.CertFile != "" && t.KeyFile != "" }

// Algorithm names for Backpressure.Algorithm.
const (
	AlgorithmAuto     = "auto"     // limit.Auto: CPU load and RTT, finds the limit itself
	AlgorithmAIMD     = "aimd"     // limit.AIMD on the saturation signal
	AlgorithmGradient = "gradient" // latency gradient
	AlgorithmFixed    = "fixed"    // the limit stays at InitialLimit
)

// Backpressure configures the adaptive concurrency limit and its wait queue.
type Backpressure struct {
	// Enabled turns the adaptive limit and the queue on. When off, only
	// Server.MaxConcurrentRequests (if > 0) limits, and excess is shed at
	// once.
	Enabled bool `yaml:"enabled"`
	// Algorithm is AlgorithmAuto, AlgorithmAIMD, AlgorithmGradient or
	// AlgorithmFixed.
	Algorithm string `yaml:"algorithm" mode:"library"`
	// InitialLimit is the limit at start; 0 = the algorithm's own start:
	// the usable CPUs with auto, 100 with gradient, MaxLimit with aimd and
	// fixed (start wide open: AIMD only backs off, so a low start would
	// refuse work before any saturation). Otherwise within [MinLimit,
	// MaxLimit].
	InitialLimit int `yaml:"initialLimit" reload:"live" mode:"library"`
	// MinLimit is the floor the limit never goes below; >= 1.
	MinLimit int `yaml:"minLimit" mode:"library"`
	// MaxLimit is the most the algorithm may allow; >= MinLimit.
	MaxLimit int `yaml:"maxLimit" reload:"live" mode:"library"`
	// SaturationMax is the saturation in (0, 1] at or above which the limit
	// shrinks and new requests are shed instead of queued. "eluMax", the
	// Node.js server's name for it, is accepted in the file as an alias.
	// In front mode, where each worker has its own limit, a file's value
	// is taken, with a warning, for Proxy.SaturationMax: a file written for
	// the Node.js server tunes its workers' threshold with this key.
	SaturationMax float64 `yaml:"saturationMax" alias:"eluMax" mode:"library"`
	// SampleWindow is how often the limit is recomputed; > 0.
	SampleWindow time.Duration `yaml:"sampleWindow"`
	// SmoothingFactor is the EWMA weight in (0, 1] of each latency sample.
	SmoothingFactor float64 `yaml:"smoothingFactor"`
	// QueueSize bounds the requests waiting for a slot: QueueSizeAuto (the
	// file's "auto", the default) sizes it to the service; a number fixes
	// it; 0 = no queue (shed at once when the limit is reached).
	QueueSize QueueSize `yaml:"queueSize"`
	// QueueTimeout is the longest a request waits in the queue before 503;
	// 0 = no limit beyond the request's own deadline and CoDel.
	QueueTimeout time.Duration `yaml:"queueTimeout"`
}

// StartLimit returns the limit AIMD and fixed start with: InitialLimit, or
// MaxLimit when InitialLimit is 0.
func (b Backpressure) StartLimit() int {
	if b.InitialLimit == 0 {
		return b.MaxLimit
	}
	return b.InitialLimit
}

// AdminOff is the value of Admin.Listen that disables the admin listener.
const AdminOff = "off"

// Admin configures the admin listener (/metrics, /stats, the dashboard,
// /debug/pprof/).
type Admin struct {
	// Listen is host:port, or AdminOff. The default is loopback only; any
	// other address is used only when written in the file.
	Listen string `yaml:"listen"`
	// PProf serves /debug/pprof/ on the admin listener.
	PProf bool `yaml:"pprof"`
	// AllowedHosts are the Host header names (any case, port ignored)
	// whose state-changing requests (POST /workers/restart) the admin
	// listener accepts, beside loopback (localhost, 127.0.0.0/8, ::1),
	// which is always accepted; "*" accepts any. A request from another
	// site (per Sec-Fetch-Site or Origin) is refused whatever its Host.
	// Empty = loopback only: a DNS rebinding page cannot reach it.
	AllowedHosts []string `yaml:"allowedHosts"`
}

// Enabled reports whether the admin listener runs.
func (a Admin) Enabled() bool { return a.Listen != AdminOff }

// Worker address modes for Workers.Address.
const (
	AddressPort = "port" // env PORT, listening on 127.0.0.1
	AddressUnix = "unix" // env SLUICE_SOCKET, a Unix socket path
)

// Workers configures the processes sluice starts, supervises and forwards to.
type Workers struct {
	// Command is the program and its arguments. In the file: a list, or a
	// string split on white space (no shell quoting).
	Command []string `yaml:"command" form:"fields" reload:"roll"`
	// Count is how many processes run; CountAuto (the file's "auto") = one
	// per CPU. In the file only a positive integer or "auto" is accepted.
	Count Count `yaml:"count"`
	// Concurrency is how many requests one process is given at once:
	// ConcurrencyAuto (the file's "auto", the default) lets sluice find each
	// process's limit at run time, from 1 to MaxConcurrency; a number fixes
	// it (1 for single-threaded renderers).
	Concurrency Concurrency `yaml:"concurrency"`
	// MaxConcurrency is the most an adaptive process is ever given; >= 1.
	// Only with Concurrency auto: written beside a fixed one it is an error.
	MaxConcurrency int `yaml:"maxConcurrency"`
	// Env holds extra environment variables, added to sluice's own.
	Env map[string]string `yaml:"env" reload:"roll"`
	// Dir is the working directory; "" = sluice's.
	Dir string `yaml:"dir" reload:"roll"`
	// Address is how a worker is reached: AddressPort or AddressUnix.
	Address string `yaml:"address"`
	// ReadyPath is an HTTP GET path a ready worker answers with 2xx; "" =
	// ready as soon as a connection succeeds.
	ReadyPath string `yaml:"readyPath"`
	// StartTimeout is how long a process may take to become ready.
	StartTimeout time.Duration `yaml:"startTimeout"`
	// WarmupRequests is how many GETs of WarmupPath a new process is sent
	// before it takes traffic; 0 = none.
	WarmupRequests int `yaml:"warmupRequests"`
	// WarmupPath is the path warm-up requests ask for; "" = "/".
	WarmupPath string `yaml:"warmupPath"`
	// SlowStart: for this long after a process starts taking traffic, it
	// gets a request only when every warm process is busy. 0 = no
	// preference.
	SlowStart time.Duration `yaml:"slowStart"`
	// RestartBackoff spaces the restarts of a process that exits.
	RestartBackoff Backoff `yaml:"restartBackoff"`
	// CrashLoop pauses restarts when workers keep dying.
	CrashLoop CrashLoop `yaml:"crashLoop"`
	// Poison refuses for a while the requests shaped like those that
	// killed workers.
	Poison Poison `yaml:"poison"`
	// StopTimeout is how long a process has to exit after SIGTERM before
	// SIGKILL.
	StopTimeout time.Duration `yaml:"stopTimeout"`
	// Roll is how a rolling restart replaces each process: RollSurge or
	// RollReplace.
	Roll string `yaml:"roll"`
}

// Rolling restart modes for Workers.Roll.
const (
	// RollSurge starts each replacement beside the process it replaces.
	RollSurge = "surge"
	// RollReplace drains and stops each process before its replacement
	// starts, while the others serve.
	RollReplace = "replace"
)

// Count is a number of worker processes. CountAuto means one per CPU.
type Count int

// CountAuto is the Count written "auto": one process per CPU.
const CountAuto Count = 0

// Resolve returns the number of processes to run given the number of
// CPUs.
func (c Count) Resolve(cpus int) int {
	if c == CountAuto {
		return max(cpus, 1)
	}
	return int(c)
}

// QueueSize is how many requests may wait for a slot. QueueSizeAuto sizes
// the queue to the service: as many requests as the slots serve in half a
// second, from 100 to 4,096 (admission.Options.QueueSize zero). Zero is no
// queue.
type QueueSize int

// QueueSizeAuto is the QueueSize written "auto".
const QueueSizeAuto QueueSize = -1

// Concurrency is how many requests one worker or upstream is given at
// once. ConcurrencyAuto means adaptive: found at run time, per worker, from
// 1 up to a maximum.
type Concurrency int

// ConcurrencyAuto is the Concurrency written "auto".
const ConcurrencyAuto Concurrency = 0

// Auto reports whether c is ConcurrencyAuto.
func (c Concurrency) Auto() bool { return c == ConcurrencyAuto }

// Limit returns the per-worker limit to configure and whether it is
// adaptive: (max, true) for ConcurrencyAuto, else (c, false).
func (c Concurrency) Limit(maxConcurrency int) (n int, adaptive bool) {
	if c.Auto() {
		return maxConcurrency, true
	}
	return int(c), false
}

// Backoff is an exponential back-off between Initial and Max.
type Backoff struct {
	Initial time.Duration `yaml:"initial"`
	Max     time.Duration `yaml:"max"`
}

// CrashLoop is the guard against workers that keep dying: more than Exits
// exits within Window pause all restarts and turn readiness 503 for Window
// (longer when it trips again right after), then restarts resume by
// themselves; a rolling restart ends the pause at once.
type CrashLoop struct {
	// Exits is the number of exits tolerated within Window; 0 = 5 per
	// process (see Limit).
	Exits int `yaml:"exits"`
	// Window is the sliding window exits are counted in.
	Window time.Duration `yaml:"window"`
}

// Limit returns the exits tolerated within the window for the given number
// of processes.
func (c CrashLoop) Limit(processes int) int {
	if c.Exits == 0 {
		return 5 * max(processes, 1)
	}
	return c.Exits
}

// Poison is the defence against requests that kill their worker (see
// internal/poison): a request shape (method and generalised path) in
// flight at After worker deaths within Window, and answered fewer times
// than that, is refused with 503 for Quarantine, doubling each time it
// kills again after, up to MaxQuarantine; one request at a time probes it
// after each quarantine. While Enabled, a worker that answered requests
// and died holding some does not count toward CrashLoop.
type Poison struct {
	Enabled       bool          `yaml:"enabled"`
	After         int           `yaml:"after"`
	Window        time.Duration `yaml:"window"`
	Quarantine    time.Duration `yaml:"quarantine"`
	MaxQuarantine time.Duration `yaml:"maxQuarantine"`
}

// Upstreams configures servers sluice forwards to but does not start.
type Upstreams struct {
	// Servers are the upstreams; at least one.
	Servers []Upstream `yaml:"servers"`
	// HealthCheck is how an upstream is found up or down.
	HealthCheck HealthCheck `yaml:"healthCheck"`
}

// Upstream is one server. In the file it is a mapping, or just its address.
type Upstream struct {
	// Address is host:port, or "unix:" followed by a socket path.
	Address string `yaml:"address"`
	// Concurrency is how many requests it is given at once, as
	// Workers.Concurrency: ConcurrencyAuto (the default) or a number >= 1.
	Concurrency Concurrency `yaml:"concurrency"`
	// MaxConcurrency is the adaptive maximum, as Workers.MaxConcurrency.
	MaxConcurrency int `yaml:"maxConcurrency"`
}

// HealthCheck probes upstreams every Interval. An upstream is marked down
// after Fails failed probes in a row and up again after Passes good ones.
type HealthCheck struct {
	// Path is the HTTP GET path that must answer 2xx; "" = a TCP connect.
	Path     string        `yaml:"path"`
	Interval time.Duration `yaml:"interval"`
	Timeout  time.Duration `yaml:"timeout"`
	Fails    int           `yaml:"fails"`
	Passes   int           `yaml:"passes"`
}

// Proxy configures the relay between clients and workers or upstreams.
type Proxy struct {
	// PingPath is answered 200 by sluice itself, never queued; "" = off.
	PingPath string `yaml:"pingPath"`
	// Timeout is how long a worker has to answer once the request is
	// dispatched; then 504. 0 = no limit.
	Timeout time.Duration `yaml:"timeout" mode:"front"`
	// MaxBodyBytes bounds a request body; above it 413. 0 = no bound of
	// its own: MaxBufferedBytes bounds it.
	MaxBodyBytes int64 `yaml:"maxBodyBytes" form:"size" mode:"front"`
	// MaxHeaderFields bounds a request's header fields; past it 431.
	// >= 1.
	MaxHeaderFields int `yaml:"maxHeaderFields" mode:"front"`
	// UnderscoresInHeaders passes request header names with "_" on to
	// workers, but never one that reads, "_" as "-", as a header sluice
	// strips or sets (X_Forwarded_For). Off, all are dropped (nginx's
	// underscores_in_headers off).
	UnderscoresInHeaders bool `yaml:"underscoresInHeaders" mode:"front"`
	// MaxBufferedBytes bounds the memory of all buffered bodies at once,
	// requests and responses, reserved as bytes arrive; past it uploads get
	// 503 and responses are streamed. 0 = derived from the machine (an
	// eighth of the cgroup or physical memory, 64 MiB to 1 GiB).
	MaxBufferedBytes int64 `yaml:"maxBufferedBytes" form:"size" mode:"front"`
	// BufferResponseBytes: responses up to this size are read whole from the
	// worker before being sent, so a slow client does not hold the worker.
	// Longer ones are streamed. 0 = stream everything.
	BufferResponseBytes int64 `yaml:"bufferResponseBytes" form:"size" mode:"front"`
	// MaxUpgrades bounds the upgraded connections (WebSocket) relayed at
	// once; past it an upgrade gets 503. They hold no worker slot. >= 1.
	MaxUpgrades int `yaml:"maxUpgrades" mode:"front"`
	// Lookahead is how many requests a worker at its limit is given
	// beyond it, waiting in the worker for a render to end, so that it
	// does not idle for a round trip through the front between two.
	// 0 = only to workers below their limit. 0..8.
	Lookahead int `yaml:"lookahead" mode:"front"`
	// StreamIdleTimeout bounds the silence of a streamed response (an
	// event stream, a chunked or a longer one); past it both connections
	// are closed. 0 = none.
	StreamIdleTimeout time.Duration `yaml:"streamIdleTimeout" mode:"front"`
	// StreamTimeout bounds a streamed response's whole life. 0 = none.
	StreamTimeout time.Duration `yaml:"streamTimeout" mode:"front"`
	// StreamHold is how long a streamed response other than an event
	// stream holds its render slot before it counts against MaxStreams
	// instead. 0 = to its end.
	StreamHold time.Duration `yaml:"streamHold" mode:"front"`
	// MaxStreams bounds the streams that hold no render slot; past it an
	// event stream gets 503. >= 1.
	MaxStreams int `yaml:"maxStreams" mode:"front"`
	// SaturationMax is the saturation in (0, 1] each adaptive worker's
	// limit (concurrency auto) keeps under: the worker's own report (a
	// Node.js worker's event-loop utilization).
	SaturationMax float64 `yaml:"saturationMax" mode:"front"`
	// KernelSaturation gives an adaptive worker that reports no
	// saturation the one the kernel measures for its process, on Linux:
	// its main thread's time running or preempted, over time (a worker
	// sluice runs, or one listening on a loopback upstream). false judges
	// such a worker by its throughput and latency alone.
	KernelSaturation bool `yaml:"kernelSaturation" mode:"front"`
}

// MaxLookahead bounds proxy.lookahead: the proxy's own bound
// (internal/app's tests check that they agree).
const MaxLookahead = 8

// Overload tunes the admission queue's discipline.
type Overload struct {
	// PriorityMinShare in [0, 1) is the share of dispatches guaranteed to
	// lower priorities while they wait, so they are never starved; 0 =
	// strict priority.
	PriorityMinShare float64 `yaml:"priorityMinShare"`
	// CoDel drops requests from a standing queue.
	CoDel CoDel `yaml:"codel"`
	// AdaptiveLIFO serves the newest waiter first while a standing queue
	// exists.
	AdaptiveLIFO bool `yaml:"adaptiveLifo"`
}

// CoDel is controlled delay: when the queue's minimum sojourn stays at or
// above Target for a whole Interval, waiters are dropped.
type CoDel struct {
	Enabled  bool          `yaml:"enabled"`
	Target   time.Duration `yaml:"target"`
	Interval time.Duration `yaml:"interval"`
}

// Tenants says how requests are grouped for fair sharing.
type Tenants struct {
	// Key is where a request's tenant comes from: "" (none), "header:NAME",
	// "cookie:NAME" or "clientIP". A trusted peer's Sluice-Tenant header
	// overrides it.
	Key string `yaml:"key" reload:"live"`
	// Weights gives some tenants a larger fair share (> 0; default 1).
	Weights map[string]float64 `yaml:"weights" reload:"live"`
	// MaxTracked bounds the tenants tracked at once; >= 1.
	MaxTracked int `yaml:"maxTracked"`
	// MaxQueuedPerTenant caps one tenant's queued requests; 0 = no cap
	// beyond fairness.
	MaxQueuedPerTenant int `yaml:"maxQueuedPerTenant"`
	// Quota limits each tenant's rate of requests, summed over every
	// instance sharing its store; nil when the file has no tenants.quota.
	Quota *Quota `yaml:"quota"`
}

// Route classifies the requests its Match matches.
type Route struct {
	Match Match `yaml:"match"`
	// Priority is a class's header form (admission.ParsePriority):
	// critical-plus, critical, sheddable-plus or sheddable.
	Priority string `yaml:"priority"`
	// Cost is how many slots a request takes; >= 1.
	Cost int `yaml:"cost"`
	// Timeout replaces Proxy.Timeout for these requests; 0 = Proxy.Timeout.
	Timeout time.Duration `yaml:"timeout"`
	// StreamIdleTimeout and StreamTimeout replace the Proxy's for these
	// requests' streamed responses; 0 = the Proxy's.
	StreamIdleTimeout time.Duration `yaml:"streamIdleTimeout" mode:"front"`
	StreamTimeout     time.Duration `yaml:"streamTimeout" mode:"front"`
	// Fallback, when set, is served instead of a shed, no-worker, timeout
	// or bad-gateway error (and, opt-in, a worker's 5xx).
	Fallback *Fallback `yaml:"fallback" mode:"front"`
	// Quota, when set, is these requests' own rate limit per tenant, in
	// place of tenants.quota's (which must be set).
	Quota *RouteQuota `yaml:"quota" reload:"restart"`
}

// Match selects requests. Empty fields match everything; set fields must all
// match.
type Match struct {
	// Method is an exact, case-sensitive method ("GET").
	Method string `yaml:"method"`
	// PathPrefix is a prefix of the URL path; starts with "/".
	PathPrefix string `yaml:"pathPrefix"`
	// Header is "Name: value" (the header has exactly that value) or "Name"
	// (the header is present).
	Header string `yaml:"header"`
}

// Fallback is a fixed response served instead of shed, no-worker, timeout
// and bad-gateway errors (and, opt-in, a worker's 5xx),
// such as a client-side-render shell. Body and File are exclusive.
type Fallback struct {
	Status      int    `yaml:"status"`
	ContentType string `yaml:"contentType"`
	// Body is the response body, inline.
	Body string `yaml:"body"`
	// File is read for the body at start-up.
	File string `yaml:"file"`
	// OnWorkerError serves the fallback in place of a worker's 5xx too,
	// when the response was buffered whole (not yet streamed). A worker
	// that fails (502) gets the fallback either way.
	OnWorkerError bool `yaml:"onWorkerError"`
	// Props is where a request carries its page's props, "query:NAME" or
	// "header:NAME": each {{sluice.props}} in the body is replaced by them,
	// as a string literal safe in a <script> (null when absent), for a
	// client-render shell. "" = none.
	Props string `yaml:"props"`
}

// Default returns the built-in configuration: what sluice runs with when
// there is no file, and what a file's missing keys keep.
func Default() *Config {
	return &Config{
		Server: Server{
			Listen:                ":3000",
			KeepAliveTimeout:      65 * time.Second,
			HeadersTimeout:        66 * time.Second,
			RequestTimeout:        30 * time.Second,
			ShutdownTimeout:       25 * time.Second,
			DrainDelay:            5 * time.Second,
			MaxConcurrentRequests: 100,
			MaxHeaderBytes:        64 << 10,
			MaxConnections:        10000,
			SendTimeout:           60 * time.Second,
			HealthPath:            "/__sluice/health",
			ReadyPath:             "/__sluice/ready",
			Backpressure: Backpressure{
				Enabled:         true,
				Algorithm:       AlgorithmAuto,
				MinLimit:        1,
				MaxLimit:        1000,
				SaturationMax:   0.95,
				SampleWindow:    time.Second,
				SmoothingFactor: 0.2,
				QueueSize:       QueueSizeAuto,
				QueueTimeout:    5 * time.Second,
			},
		},
		Admin: Admin{Listen: "127.0.0.1:9090"},
		Proxy: Proxy{
			PingPath:            "/ping",
			Timeout:             30 * time.Second,
			MaxBodyBytes:        10 << 20,
			MaxHeaderFields:     100,
			BufferResponseBytes: 1 << 20,
			MaxUpgrades:         1024,
			Lookahead:           1,
			StreamIdleTimeout:   60 * time.Second,
			StreamTimeout:       time.Hour,
			StreamHold:          5 * time.Second,
			MaxStreams:          1024,
			SaturationMax:       0.98,
			KernelSaturation:    true,
		},
		Overload: Overload{
			PriorityMinShare: 0.05,
			CoDel:            CoDel{Enabled: true, Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond},
			AdaptiveLIFO:     true,
		},
		Tenants:     Tenants{MaxTracked: 10000},
		Compression: defaultCompression(),
	}
}

// The defaults of optional sections, applied when the file has one.

func (w *Workers) setDefaults() {
	*w = Workers{
		Count:          CountAuto,
		Concurrency:    ConcurrencyAuto,
		MaxConcurrency: DefaultMaxConcurrency,
		Address:        AddressPort,
		StartTimeout:   30 * time.Second,
		SlowStart:      10 * time.Second,
		RestartBackoff: Backoff{Initial: 100 * time.Millisecond, Max: 30 * time.Second},
		CrashLoop:      CrashLoop{Window: 60 * time.Second},
		Poison:         Poison{Enabled: true, After: 2, Window: 10 * time.Minute, Quarantine: time.Minute, MaxQuarantine: time.Hour},
		StopTimeout:    10 * time.Second,
		Roll:           RollSurge,
	}
}

func (u *Upstreams) setDefaults() {
	*u = Upstreams{HealthCheck: HealthCheck{Interval: 2 * time.Second, Timeout: time.Second, Fails: 3, Passes: 1}}
}

func (u *Upstream) setDefaults() {
	*u = Upstream{Concurrency: ConcurrencyAuto, MaxConcurrency: DefaultMaxConcurrency}
}

// DefaultMaxConcurrency is the default adaptive maximum per worker or
// upstream: far above what a single-threaded renderer holds, enough for an
// async one whose requests mostly await I/O.
const DefaultMaxConcurrency = 64

func (r *Route) setDefaults() { *r = Route{Priority: admission.Critical.String(), Cost: 1} }

func (f *Fallback) setDefaults() {
	*f = Fallback{Status: 200, ContentType: "text/html; charset=utf-8"}
}
