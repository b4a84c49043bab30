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

	"github.com/sluicehq/sluice/internal/loadgen"
)

const benchDefaultURL = "http://127.0.0.1:3000/"

// benchPriorities are the Sluice-Priority classes, highest first.
var benchPriorities = []string{"critical-plus", "critical", "sheddable-plus", "sheddable"}

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

func parseBenchArgs(args []string, stderr io.Writer) (*benchRun, error) {
	fs := flag.NewFlagSet("sluice bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		rate           = fs.Float64("rate", 100, "offered load in requests per second (one phase; see -ramp)")
		duration       = fs.Duration("duration", 10*time.Second, "length of the run (one phase; see -ramp)")
		ramp           = fs.String("ramp", "", `phases instead of -rate/-duration: "100:10s,200:10s,400:10s" (steps) or "100->800:30s" (a linear ramp); a rate of 0 pauses`)
		timeout        = fs.Duration("timeout", loadgen.DefaultTimeout, "the client's patience per attempt; a later answer is a timeout")
		maxOutstanding = fs.Int("max-outstanding", loadgen.DefaultMaxOutstanding, "requests in flight at most; a send due beyond it is counted as generator-dropped")
		keepAlive      = fs.Bool("keepalive", true, "reuse connections; -keepalive=false opens one per request")
		method         = fs.String("method", http.MethodGet, "HTTP method")
		body           = fs.String("body", "", "request body; @FILE reads it from FILE")
		headers        benchHeaderFlags
		tenants        = fs.String("tenants", "", `tenant mix by weight, sent in -tenant-header: "a=90,b=10"`)
		tenantHeader   = fs.String("tenant-header", "Sluice-Tenant", "header that carries the tenant")
		priorities     = fs.String("priorities", "", `Sluice-Priority mix by weight: "critical=50,sheddable=50" (`+strings.Join(benchPriorities, ", ")+")")
		query          = fs.String("query", "", `query-string mix by weight: "cpu=5:90,cpu=50:10" (cost per request on a test server)`)
		retry          = fs.String("retry", "none", "on failure: none, immediate, backoff (exponential, full jitter) or retry-after (honour Retry-After, else back off)")
		attempts       = fs.Int("attempts", 0, fmt.Sprintf("attempts per request, the first included (default 1, or %d when retrying)", loadgen.DefaultRetryAttempts))
		jsonPath       = fs.String("json", "", `write the full report as JSON to FILE ("-": stdout, instead of the table)`)
		svgPath        = fs.String("svg", "", "write a chart of offered load, goodput, errors and p99 latency over time to FILE")
		bucket         = fs.Duration("bucket", 0, "time-series resolution (default 250ms, or 1s for runs over 2m)")
		seed           = fs.Uint64("seed", 1, "seed for the mixes and the retry jitter: the same seed draws the same sequence")
		allowRemote    = fs.Bool("allow-remote", false, "allow a target that is not a loopback address; only ever point bench at servers you run")
	)
	fs.Var(&headers, "H", `extra request header "Name: value" (repeatable)`)
	fs.Usage = func() {
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
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	br := &benchRun{jsonPath: *jsonPath, svgPath: *svgPath}
	cfg := &br.cfg

	target := benchDefaultURL
	switch fs.NArg() {
	case 0:
	case 1:
		target = fs.Arg(0)
		if !strings.Contains(target, "://") {
			target = "http://" + target
		}
	default:
		return nil, fmt.Errorf("want at most one URL, got %q", fs.Args())
	}
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("URL %q: want http://host[:port]/path", target)
	}
	if !*allowRemote {
		if err := benchCheckLoopback(u.Hostname()); err != nil {
			return nil, err
		}
		cfg.LoopbackOnly = true
	}
	cfg.URL = u.String()

	if *ramp != "" {
		if set["rate"] || set["duration"] {
			return nil, errors.New("-ramp replaces -rate and -duration: give one or the other")
		}
		if cfg.Phases, err = loadgen.ParsePhases(*ramp); err != nil {
			return nil, fmt.Errorf("-ramp: %w", err)
		}
	} else {
		switch {
		case *rate < 0 || *rate != *rate:
			return nil, fmt.Errorf("-rate %v: want a rate >= 0", *rate)
		case *duration <= 0:
			return nil, fmt.Errorf("-duration %v: want > 0", *duration)
		}
		cfg.Phases = []loadgen.Phase{{Rate: *rate, Duration: *duration}}
	}

	switch {
	case *timeout <= 0:
		return nil, fmt.Errorf("-timeout %v: want > 0", *timeout)
	case *maxOutstanding <= 0:
		return nil, fmt.Errorf("-max-outstanding %d: want > 0", *maxOutstanding)
	case *attempts < 0:
		return nil, fmt.Errorf("-attempts %d: want >= 1", *attempts)
	case *bucket < 0:
		return nil, fmt.Errorf("-bucket %v: want > 0", *bucket)
	}
	cfg.Timeout, cfg.MaxOutstanding, cfg.Bucket = *timeout, *maxOutstanding, *bucket
	cfg.DisableKeepAlives = !*keepAlive
	cfg.Seed = *seed

	if cfg.Retry, err = loadgen.ParseRetryMode(*retry); err != nil {
		return nil, fmt.Errorf("-retry: %w", err)
	}
	if cfg.Retry == loadgen.RetryNone && *attempts > 1 {
		return nil, fmt.Errorf("-attempts %d: retries are off; add -retry immediate, backoff or retry-after", *attempts)
	}
	cfg.MaxAttempts = *attempts

	cfg.Method = strings.ToUpper(*method)
	if cfg.Method == "" || strings.ContainsAny(cfg.Method, " \t\r\n") {
		return nil, fmt.Errorf("-method %q: not an HTTP method", *method)
	}
	if *body != "" {
		if name, ok := strings.CutPrefix(*body, "@"); ok {
			if cfg.Body, err = os.ReadFile(name); err != nil {
				return nil, fmt.Errorf("-body: %w", err)
			}
		} else {
			cfg.Body = []byte(*body)
		}
	}
	cfg.Header = headers.header

	if *tenants != "" {
		ws, err := loadgen.ParseWeights(*tenants, '=')
		if err != nil {
			return nil, fmt.Errorf("-tenants: %w", err)
		}
		if *tenantHeader == "" {
			return nil, errors.New("-tenant-header: empty")
		}
		cfg.HeaderMixes = append(cfg.HeaderMixes, loadgen.HeaderMix{Name: *tenantHeader, Values: ws})
	}
	if *priorities != "" {
		ws, err := loadgen.ParseWeights(*priorities, '=')
		if err != nil {
			return nil, fmt.Errorf("-priorities: %w", err)
		}
		for _, w := range ws {
			if !slices.Contains(benchPriorities, w.Value) {
				return nil, fmt.Errorf("-priorities: unknown class %q (want %s)", w.Value, strings.Join(benchPriorities, ", "))
			}
		}
		cfg.HeaderMixes = append(cfg.HeaderMixes, loadgen.HeaderMix{Name: "Sluice-Priority", Values: ws})
	}
	if *query != "" {
		if cfg.QueryMix, err = loadgen.ParseWeights(*query, ':'); err != nil {
			return nil, fmt.Errorf("-query: %w", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err // every field was checked above; this is a backstop
	}
	return br, nil
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
