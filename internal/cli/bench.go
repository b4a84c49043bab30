package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/loadgen"
)

const benchDefaultURL = "http://127.0.0.1:3000/"

// benchPriorities are the Sluice-Priority classes, highest first.
var benchPriorities = []string{admission.CriticalPlus.String(), admission.Critical.String(), admission.SheddablePlus.String(), admission.Sheddable.String()}

// benchRun is what the command line asks for.
type benchRun struct {
	cfg      loadgen.Config
	jsonPath string // "-" for stdout
	svgPath  string
}

// runBench offers open-loop load to a server and prints what came back.
// Exit codes: 0 when the run completed, whatever the server did; 1 on a
// setup or output error, or when interrupted (after printing the partial
// report); 2 on bad arguments.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	br, err := parseBenchArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice bench: %v\n", err)
		return 2
	}
	if benchIsTerminal(stderr) {
		br.cfg.Progress = stderr
	}
	rep, runErr := loadgen.Run(ctx, br.cfg)
	if rep == nil {
		fmt.Fprintf(stderr, "sluice bench: %v\n", runErr)
		return 1
	}
	code := 0
	if br.jsonPath != "-" {
		if err := rep.WriteTable(stdout); err != nil {
			fmt.Fprintf(stderr, "sluice bench: writing the table: %v\n", err)
			code = 1
		}
	}
	if br.jsonPath != "" {
		if err := benchWriteOutput(br.jsonPath, stdout, rep.WriteJSON); err != nil {
			fmt.Fprintf(stderr, "sluice bench: -json: %v\n", err)
			code = 1
		}
	}
	if br.svgPath != "" {
		if err := benchWriteOutput(br.svgPath, stdout, rep.WriteSVG); err != nil {
			fmt.Fprintf(stderr, "sluice bench: -svg: %v\n", err)
			code = 1
		}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "sluice bench: %v (the report covers the run so far)\n", runErr)
		code = 1
	}
	return code
}

// benchWriteOutput writes with write to path, or to stdout when path is "-".
func benchWriteOutput(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// benchFlags are `sluice bench`'s flags, as parsed.
type benchFlags struct {
	rate           float64
	duration       time.Duration
	ramp           string
	timeout        time.Duration
	maxOutstanding int
	keepAlive      bool
	method         string
	body           string
	headers        benchHeaderFlags
	tenants        string
	tenantHeader   string
	priorities     string
	query          string
	retry          string
	attempts       int
	jsonPath       string
	svgPath        string
	bucket         time.Duration
	seed           uint64
	allowRemote    bool
	set            map[string]bool // the flags given on the command line
}

// newBenchFlagSet returns the flag table of `sluice bench`, its values
// parsed into f.
func newBenchFlagSet(stderr io.Writer) (*flag.FlagSet, *benchFlags) {
	fs := flag.NewFlagSet("sluice bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &benchFlags{}
	fs.Float64Var(&f.rate, "rate", 100, "offered load in requests per second (one phase; see -ramp)")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "length of the run (one phase; see -ramp)")
	fs.StringVar(&f.ramp, "ramp", "", `phases instead of -rate/-duration: "100:10s,200:10s,400:10s" (steps) or "100->800:30s" (a linear ramp); a rate of 0 pauses`)
	fs.DurationVar(&f.timeout, "timeout", loadgen.DefaultTimeout, "the client's patience per attempt; a later answer is a timeout")
	fs.IntVar(&f.maxOutstanding, "max-outstanding", loadgen.DefaultMaxOutstanding, "requests in flight at most; a send due beyond it is counted as generator-dropped")
	fs.BoolVar(&f.keepAlive, "keepalive", true, "reuse connections; -keepalive=false opens one per request")
	fs.StringVar(&f.method, "method", http.MethodGet, "HTTP method")
	fs.StringVar(&f.body, "body", "", "request body; @FILE reads it from FILE")
	fs.Var(&f.headers, "H", `extra request header "Name: value" (repeatable)`)
	fs.StringVar(&f.tenants, "tenants", "", `tenant mix by weight, sent in -tenant-header: "a=90,b=10"`)
	fs.StringVar(&f.tenantHeader, "tenant-header", admission.HeaderTenant, "header that carries the tenant")
	fs.StringVar(&f.priorities, "priorities", "", `Sluice-Priority mix by weight: "critical=50,sheddable=50" (`+strings.Join(benchPriorities, ", ")+")")
	fs.StringVar(&f.query, "query", "", `query-string mix by weight: "cpu=5:90,cpu=50:10" (cost per request on a test server)`)
	fs.StringVar(&f.retry, "retry", "none", "on failure: none, immediate, backoff (exponential, full jitter) or retry-after (honour Retry-After, else back off)")
	fs.IntVar(&f.attempts, "attempts", 0, fmt.Sprintf("attempts per request, the first included (default 1, or %d when retrying)", loadgen.DefaultRetryAttempts))
	fs.StringVar(&f.jsonPath, "json", "", `write the full report as JSON to FILE ("-": stdout, instead of the table)`)
	fs.StringVar(&f.svgPath, "svg", "", "write a chart of offered load, goodput, errors and p99 latency over time to FILE")
	fs.DurationVar(&f.bucket, "bucket", 0, "time-series resolution (default 250ms, or 1s for runs over 2m)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed for the mixes and the retry jitter: the same seed draws the same sequence")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow a target that is not a loopback address; only ever point bench at servers you run")
	fs.Usage = func() { benchUsage(fs) }
	return fs, f
}

func benchUsage(fs *flag.FlagSet) {
	out := fs.Output()
	fmt.Fprintln(out, "usage: sluice bench [flags] [URL]")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Offers open-loop HTTP load to URL (default "+benchDefaultURL+") and reports")
	fmt.Fprintln(out, "goodput, latency of successes and errors by kind (503 by Sluice-Shed reason,")
	fmt.Fprintln(out, "429, timeouts...) per phase. Sends keep to their schedule however slowly the")
	fmt.Fprintln(out, "server answers, and latency counts from the scheduled send.")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Only point it at your own servers: it is built to overload them. Targets other")
	fmt.Fprintln(out, "than loopback addresses (127.0.0.0/8, ::1, localhost) need -allow-remote.")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "flags:")
	fs.PrintDefaults()
}

// parseBenchArgs reads the command line into a run: its flags, each
// checked with the flag's name in the error, then the loadgen.Config they
// make validated as a whole.
func parseBenchArgs(args []string, stderr io.Writer) (*benchRun, error) {
	fs, f := newBenchFlagSet(stderr)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })

	br := &benchRun{jsonPath: f.jsonPath, svgPath: f.svgPath}
	cfg := &br.cfg
	if err := f.target(cfg, fs.Args()); err != nil {
		return nil, err
	}
	if err := f.phases(cfg); err != nil {
		return nil, err
	}
	if err := f.client(cfg); err != nil {
		return nil, err
	}
	if err := f.request(cfg); err != nil {
		return nil, err
	}
	if err := f.mixes(cfg); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err // every field was checked above; this is a backstop
	}
	return br, nil
}

// target sets the URL from the arguments, a loopback one unless
// -allow-remote.
func (f *benchFlags) target(cfg *loadgen.Config, args []string) error {
	target := benchDefaultURL
	switch len(args) {
	case 0:
	case 1:
		target = args[0]
		if !strings.Contains(target, "://") {
			target = "http://" + target
		}
	default:
		return fmt.Errorf("want at most one URL, got %q", args)
	}
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("URL %q: want http://host[:port]/path", target)
	}
	if !f.allowRemote {
		if err := benchCheckLoopback(u.Hostname()); err != nil {
			return err
		}
		cfg.LoopbackOnly = true
	}
	cfg.URL = u.String()
	return nil
}

// phases sets the load's phases: -ramp's, or one of -rate for -duration.
func (f *benchFlags) phases(cfg *loadgen.Config) error {
	if f.ramp != "" {
		if f.set["rate"] || f.set["duration"] {
			return errors.New("-ramp replaces -rate and -duration: give one or the other")
		}
		var err error
		if cfg.Phases, err = loadgen.ParsePhases(f.ramp); err != nil {
			return fmt.Errorf("-ramp: %w", err)
		}
		return nil
	}
	switch {
	case f.rate < 0 || f.rate != f.rate:
		return fmt.Errorf("-rate %v: want a rate >= 0", f.rate)
	case f.duration <= 0:
		return fmt.Errorf("-duration %v: want > 0", f.duration)
	}
	cfg.Phases = []loadgen.Phase{{Rate: f.rate, Duration: f.duration}}
	return nil
}

// client sets how the client behaves: its patience, connections, retries
// and what it records.
func (f *benchFlags) client(cfg *loadgen.Config) error {
	switch {
	case f.timeout <= 0:
		return fmt.Errorf("-timeout %v: want > 0", f.timeout)
	case f.maxOutstanding <= 0:
		return fmt.Errorf("-max-outstanding %d: want > 0", f.maxOutstanding)
	case f.attempts < 0:
		return fmt.Errorf("-attempts %d: want >= 1", f.attempts)
	case f.bucket < 0:
		return fmt.Errorf("-bucket %v: want > 0", f.bucket)
	}
	cfg.Timeout, cfg.MaxOutstanding, cfg.Bucket = f.timeout, f.maxOutstanding, f.bucket
	cfg.DisableKeepAlives = !f.keepAlive
	cfg.Seed = f.seed

	var err error
	if cfg.Retry, err = loadgen.ParseRetryMode(f.retry); err != nil {
		return fmt.Errorf("-retry: %w", err)
	}
	if cfg.Retry == loadgen.RetryNone && f.attempts > 1 {
		return fmt.Errorf("-attempts %d: retries are off; add -retry immediate, backoff or retry-after", f.attempts)
	}
	cfg.MaxAttempts = f.attempts
	return nil
}

// request sets what every request is: its method, body and headers.
func (f *benchFlags) request(cfg *loadgen.Config) error {
	cfg.Method = strings.ToUpper(f.method)
	if cfg.Method == "" || strings.ContainsAny(cfg.Method, " \t\r\n") {
		return fmt.Errorf("-method %q: not an HTTP method", f.method)
	}
	if f.body != "" {
		if name, ok := strings.CutPrefix(f.body, "@"); ok {
			var err error
			if cfg.Body, err = os.ReadFile(name); err != nil {
				return fmt.Errorf("-body: %w", err)
			}
		} else {
			cfg.Body = []byte(f.body)
		}
	}
	cfg.Header = f.headers.header
	return nil
}

// mixes sets what varies between requests: the tenant, the priority and
// the query string, each drawn by weight.
func (f *benchFlags) mixes(cfg *loadgen.Config) error {
	if f.tenants != "" {
		ws, err := loadgen.ParseWeights(f.tenants, '=')
		if err != nil {
			return fmt.Errorf("-tenants: %w", err)
		}
		if f.tenantHeader == "" {
			return errors.New("-tenant-header: empty")
		}
		cfg.HeaderMixes = append(cfg.HeaderMixes, loadgen.HeaderMix{Name: f.tenantHeader, Values: ws})
	}
	if f.priorities != "" {
		ws, err := loadgen.ParseWeights(f.priorities, '=')
		if err != nil {
			return fmt.Errorf("-priorities: %w", err)
		}
		for _, w := range ws {
			if !slices.Contains(benchPriorities, w.Value) {
				return fmt.Errorf("-priorities: unknown class %q (want %s)", w.Value, strings.Join(benchPriorities, ", "))
			}
		}
		cfg.HeaderMixes = append(cfg.HeaderMixes, loadgen.HeaderMix{Name: admission.HeaderPriority, Values: ws})
	}
	if f.query != "" {
		var err error
		if cfg.QueryMix, err = loadgen.ParseWeights(f.query, ':'); err != nil {
			return fmt.Errorf("-query: %w", err)
		}
	}
	return nil
}

// benchCheckLoopback refuses hosts other than loopback IP literals and
// localhost. Names are not resolved here: the dialer checks the address
// it actually connects to (Config.LoopbackOnly).
func benchCheckLoopback(host string) error {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return nil
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to load %q: not a loopback address. bench is built to overload a server: "+
		"point it only at servers you run, and add -allow-remote for one that is not on this machine", host)
}

// benchHeaderFlags collects repeated -H "Name: value" flags.
type benchHeaderFlags struct{ header http.Header }

func (h *benchHeaderFlags) String() string { return "" }

func (h *benchHeaderFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return fmt.Errorf("%q: want \"Name: value\"", s)
	}
	if h.header == nil {
		h.header = make(http.Header)
	}
	h.header.Add(name, strings.TrimSpace(value))
	return nil
}

// benchIsTerminal reports whether w is a terminal, so that the progress line's
// carriage returns do not litter logs and files. A character device other
// than /dev/null is taken for one.
func benchIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
