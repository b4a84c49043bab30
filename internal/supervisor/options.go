package supervisor

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"time"
)

// AddressMode says how a worker learns where to listen.
type AddressMode string

const (
	// PortMode gives each worker a free port on 127.0.0.1 in env PORT.
	PortMode AddressMode = "port"
	// UnixMode gives each worker a socket path in a private temporary
	// directory (mode 0700) in env SLUICE_SOCKET.
	UnixMode AddressMode = "unix"
)

// RollMode says how a RollingRestart replaces each worker.
type RollMode string

const (
	// RollSurge starts each replacement beside the worker it replaces,
	// and stops the old one once the new one is ready.
	RollSurge RollMode = "surge"
	// RollReplace drains and stops each worker, then starts its
	// replacement, while the other workers serve.
	RollReplace RollMode = "replace"
)

// HeaderWarmup is set (to "1") on warm-up requests, so that a worker can
// tell them from traffic: keep them out of its metrics, say.
const HeaderWarmup = "Sluice-Warmup"

// Defaults applied by New to zero fields of Options.
const (
	DefaultStartTimeout    = 30 * time.Second
	DefaultReadyInterval   = 100 * time.Millisecond
	DefaultWarmupPath      = "/"
	DefaultBackoffMin      = 100 * time.Millisecond
	DefaultBackoffMax      = 30 * time.Second
	DefaultBackoffJitter   = 0.2
	DefaultStableAfter     = 30 * time.Second
	DefaultCrashLoopWindow = 60 * time.Second
	DefaultStopTimeout     = 10 * time.Second
	// DefaultCrashLoopExitsPerWorker times Count is the default
	// CrashLoopExits: five exits per worker within a minute is a pattern
	// (a bad deploy, a missing dependency), not bad luck, and restarting
	// faster only burns CPU. (The Node.js server whose settings sluice.yaml
	// takes over used the same CPUs x 5 in 60 s in its cluster mode.)
	DefaultCrashLoopExitsPerWorker = 5

	// SettlePoll is how often a rolling restart asks Options.Settled,
	// and SettleMax the longest it waits between two slots: under an
	// overload that lasts, the queue never empties, and the roll goes
	// on at that pace.
	SettlePoll = 100 * time.Millisecond
	SettleMax  = 5 * time.Second
)

// Options configures a Supervisor. The zero value of every field except
// Command is usable: New replaces zeros with the defaults documented on each
// field. Options is a plain value; New copies it.
type Options struct {
	// Command is the worker's program and arguments; Command[0] is looked
	// up in PATH. Required, and New refuses a program that cannot be
	// started (Command.Executable).
	Command []string
	// Count is how many workers run at once. Zero means runtime.NumCPU();
	// negative is invalid.
	Count int
	// Concurrency is how many requests one worker may hold at once
	// (Endpoint.Concurrency). Zero means 1, right for single-threaded
	// renderers. With Adaptive it is the maximum.
	Concurrency int
	// Adaptive lets the proxy find each worker's limit at run time, in
	// [1, Concurrency] (Endpoint.Adaptive).
	Adaptive bool
	// Env is extra KEY=VALUE pairs added to sluice's own environment. The
	// variables the supervisor sets (PORT or SLUICE_SOCKET,
	// SLUICE_WORKER_ID, SLUICE_WORKER_SLOT) win over them.
	Env []string
	// Dir is the worker's working directory; empty means sluice's.
	Dir string
	// AddressMode is PortMode or UnixMode; empty means PortMode.
	AddressMode AddressMode

	// ReadyPath is an HTTP path (starting with "/") that answers 2xx once
	// the worker can serve. Empty means a worker is ready as soon as a
	// connection to its address succeeds.
	ReadyPath string
	// ReadyInterval is the longest pause between readiness checks during
	// start-up; the first pauses are shorter (10 ms, doubling), so that a
	// worker that listens quickly is found quickly. Zero means
	// DefaultReadyInterval.
	ReadyInterval time.Duration
	// StartTimeout bounds a worker's whole start: from spawn to ready and
	// warmed. A worker that takes longer is killed and counts as a crash.
	// Zero means DefaultStartTimeout.
	StartTimeout time.Duration
	// WarmupRequests is how many GET requests are sent to WarmupPath, one
	// after another, after the worker is ready and before it receives
	// traffic, so that a cold process (no JIT, empty caches) does not meet
	// full load. Zero means none. The answers' status codes are only
	// logged; a request that fails at the transport level fails the start.
	WarmupRequests int
	// WarmupPath is the path warm-up requests go to (with HeaderWarmup:
	// 1). Empty means DefaultWarmupPath.
	WarmupPath string

	// BackoffMin and BackoffMax bound the delay before restarting a worker
	// that exited on its own: it doubles with each consecutive failure of
	// the same slot, from BackoffMin up to BackoffMax. Zero means
	// DefaultBackoffMin and DefaultBackoffMax.
	BackoffMin, BackoffMax time.Duration
	// BackoffJitter in [0, 1] is the largest fraction taken off each delay
	// at random, so that workers that fail together do not restart in step.
	// Zero means DefaultBackoffJitter; negative means no jitter.
	BackoffJitter float64
	// StableAfter is how long a worker must have been serving for its exit
	// to reset its slot's backoff to BackoffMin. Zero means
	// DefaultStableAfter.
	StableAfter time.Duration

	// CrashLoopExits and CrashLoopWindow form the crash-loop guard: more
	// than CrashLoopExits unexpected exits (crashes, start failures) within
	// CrashLoopWindow stop all restarts and turn Ready false, until a
	// RollingRestart. The exits of workers that answered requests and
	// died holding some, as a Witness Balancer saw them, do not count:
	// those are most likely a request's doing, not the command's. Zero CrashLoopExits means
	// DefaultCrashLoopExitsPerWorker x Count; negative disables the guard.
	// Zero CrashLoopWindow means DefaultCrashLoopWindow.
	CrashLoopExits  int
	CrashLoopWindow time.Duration

	// StopTimeout is how long a worker has to exit after SIGTERM before it
	// is sent SIGKILL. Zero means DefaultStopTimeout.
	StopTimeout time.Duration

	// Roll is how a RollingRestart replaces each worker. Empty means
	// RollSurge: the replacement starts beside the old worker, which
	// keeps serving until the new one is ready, and keeps serving if it
	// fails. Under RollReplace a slot's worker is drained and stopped
	// before its replacement starts, so that the machine never holds
	// one worker more (its memory, the CPU of its start), but only
	// while another worker is ready to serve: a lone one surges.
	Roll RollMode
	// Settled, if set, paces a RollingRestart: between one slot's
	// replacement and the next, the roll waits until Settled has reported
	// true at two polls in a row, SettlePoll apart, or SettleMax has
	// passed. A front passes whether its queue is empty: a new worker's
	// start and its first, cold requests take CPU from the others, and
	// the next replacement then begins only once the backlog that cost
	// has been served, rather than adding its own cost to it. Nil means
	// the slots follow one another at once.
	Settled func() bool

	// Guard is a program that calls GuardMain first thing (sluice passes
	// its own executable): each worker then runs under a guard process
	// that kills the worker's whole process group when sluice dies, even by
	// SIGKILL, grandchildren included (see GuardMain's file). Empty means
	// no guard: on Linux the parent-death signal still kills the worker's
	// main process, but not what it started (an `sh -c` or `npm start`
	// worker's server outlives a SIGKILLed sluice); elsewhere nothing does.
	// Worker PIDs are then the guards'.
	Guard string

	// Logger receives the supervisor's events. Nil means they are
	// discarded.
	Logger *slog.Logger
	// Output receives the workers' stdout and stderr, line by line, each
	// line prefixed "worker ID: ". Writes are serialised. Nil means each
	// line is logged through Logger at Info with attributes worker and
	// stream.
	Output io.Writer
}

// withDefaults returns o with every zero field replaced by its default.
func (o Options) withDefaults() Options {
	if o.Count == 0 {
		o.Count = runtime.NumCPU()
	}
	if o.Concurrency == 0 {
		o.Concurrency = 1
	}
	if o.AddressMode == "" {
		o.AddressMode = PortMode
	}
	if o.Roll == "" {
		o.Roll = RollSurge
	}
	if o.ReadyInterval == 0 {
		o.ReadyInterval = DefaultReadyInterval
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.WarmupPath == "" {
		o.WarmupPath = DefaultWarmupPath
	}
	if o.BackoffMin == 0 {
		o.BackoffMin = DefaultBackoffMin
	}
	if o.BackoffMax == 0 {
		o.BackoffMax = DefaultBackoffMax
	}
	if o.BackoffJitter == 0 {
		o.BackoffJitter = DefaultBackoffJitter
	} else if o.BackoffJitter < 0 {
		o.BackoffJitter = 0
	}
	if o.StableAfter == 0 {
		o.StableAfter = DefaultStableAfter
	}
	if o.CrashLoopExits == 0 && o.Count > 0 {
		o.CrashLoopExits = DefaultCrashLoopExitsPerWorker * o.Count
	}
	if o.CrashLoopWindow == 0 {
		o.CrashLoopWindow = DefaultCrashLoopWindow
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Validate reports every field of o that is wrong once defaults are
// applied, naming the field and saying why; nil means New will accept o.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("supervisor: "+format, args...))
	}
	if len(o.Command) == 0 || o.Command[0] == "" {
		bad("Command is empty: the worker's program is required")
	}
	if o.Count < 0 {
		bad("Count is %d: must be >= 0 (0 means one per CPU)", o.Count)
	}
	if o.Concurrency < 0 {
		bad("Concurrency is %d: must be >= 0 (0 means 1)", o.Concurrency)
	}
	for _, kv := range o.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			bad("Env entry %q is not KEY=VALUE", kv)
		}
	}
	if o.AddressMode != PortMode && o.AddressMode != UnixMode {
		bad("AddressMode is %q: want %q or %q", o.AddressMode, PortMode, UnixMode)
	}
	switch o.Roll {
	case RollSurge, RollReplace:
	default:
		bad("Roll is %q: want %q or %q", o.Roll, RollSurge, RollReplace)
	}
	if o.ReadyPath != "" && !strings.HasPrefix(o.ReadyPath, "/") {
		bad("ReadyPath is %q: must start with /", o.ReadyPath)
	}
	if !strings.HasPrefix(o.WarmupPath, "/") {
		bad("WarmupPath is %q: must start with /", o.WarmupPath)
	}
	if o.WarmupRequests < 0 {
		bad("WarmupRequests is %d: must be >= 0", o.WarmupRequests)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"ReadyInterval", o.ReadyInterval},
		{"StartTimeout", o.StartTimeout},
		{"BackoffMin", o.BackoffMin},
		{"BackoffMax", o.BackoffMax},
		{"StableAfter", o.StableAfter},
		{"CrashLoopWindow", o.CrashLoopWindow},
		{"StopTimeout", o.StopTimeout},
	} {
		if d.v < 0 {
			bad("%s is %v: must be >= 0 (0 means the default)", d.name, d.v)
		}
	}
	if o.BackoffMin > o.BackoffMax {
		bad("BackoffMin %v is above BackoffMax %v", o.BackoffMin, o.BackoffMax)
	}
	if o.BackoffJitter > 1 {
		bad("BackoffJitter is %v: must be <= 1", o.BackoffJitter)
	}
	return errors.Join(errs...)
}
