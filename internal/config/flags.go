package config

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// Flags are the keys sluice serve (and sluice validate, to check what
// serve would run) take from the command line, as written there. A flag
// wins over the file: the key it sets keeps the flag's value whatever the
// file says, at start and at every reload. "" leaves a key to the file.
//
// They are the keys most often changed for one run: the ports (3000 and
// 9090 are often taken) and the size of the pool.
type Flags struct {
	Listen      string // --listen: server.listen, host:port
	Admin       string // --admin: admin.listen, host:port or "off"
	Workers     string // --workers: workers.count, a positive whole number or "auto"
	Concurrency string // --concurrency: workers.concurrency, a positive whole number or "auto"
}

// flagDef is one flag: its name, the key it sets, and where its value is.
type flagDef struct {
	name, key, usage string
	field            func(*Flags) *string
	apply            func(v *validator, cfg *Config, value string)
}

var flagDefs = []flagDef{
	{"listen", "server.listen", "`host:port` to serve on (server.listen)",
		func(f *Flags) *string { return &f.Listen },
		func(_ *validator, cfg *Config, s string) { cfg.Server.Listen = s }},
	{"admin", "admin.listen", "`host:port` of the admin listener, or off (admin.listen)",
		func(f *Flags) *string { return &f.Admin },
		func(_ *validator, cfg *Config, s string) { cfg.Admin.Listen = s }},
	{"workers", "workers.count", "worker processes: `N` or auto, one per CPU (workers.count)",
		func(f *Flags) *string { return &f.Workers },
		func(v *validator, cfg *Config, s string) {
			if n, ok := v.poolFlag(cfg, "workers.count", s); ok {
				cfg.Workers.Count = Count(n)
			}
		}},
	{"concurrency", "workers.concurrency", "requests one worker is given at once: `N` or auto, found at run time (workers.concurrency)",
		func(f *Flags) *string { return &f.Concurrency },
		func(v *validator, cfg *Config, s string) {
			if n, ok := v.poolFlag(cfg, "workers.concurrency", s); ok {
				cfg.Workers.Concurrency = Concurrency(n)
			}
		}},
}

// Define defines the flags on fs, each filling its field of f.
func (f *Flags) Define(fs *flag.FlagSet) {
	for _, d := range flagDefs {
		fs.StringVar(d.field(f), d.name, "", d.usage)
	}
}

// Overridden is a key set by a flag.
type Overridden struct {
	Flag  string // the flag, "--listen"
	Key   string // the key it sets, "server.listen"
	Value string // the flag's value
	// Line is the line of the file's own value, which the flag overrides;
	// 0 when the file does not set the key.
	Line int
}

// String says what the flag did: "--listen :3300 overrides server.listen
// (line 2)", or "--listen :3300 sets server.listen" when the file left the
// key at its default.
func (o Overridden) String() string {
	if o.Line > 0 {
		return fmt.Sprintf("%s %s overrides %s (line %d)", o.Flag, o.Value, o.Key, o.Line)
	}
	return fmt.Sprintf("%s %s sets %s", o.Flag, o.Value, o.Key)
}

// applyFlags applies f to cfg, noting which keys the flags set: their
// errors are reported under the flag, not a line of the file.
func (v *validator) applyFlags(cfg *Config, f Flags) {
	for _, d := range flagDefs {
		s := *d.field(&f)
		if s == "" {
			continue
		}
		flag := "--" + d.name
		if v.byFlag == nil {
			v.byFlag = make(map[string]string)
		}
		v.byFlag[d.key] = flag
		v.overridden = append(v.overridden, Overridden{Flag: flag, Key: d.key, Value: s, Line: v.lines[d.key]})
		d.apply(v, cfg, s)
	}
}

// poolFlag parses the value of a flag that sizes the workers' pool, which
// needs workers to size.
func (v *validator) poolFlag(cfg *Config, key, s string) (int, bool) {
	if cfg.Workers == nil {
		v.errorf(key, "needs workers to apply to: a workers section in the file, or a command after --")
		return 0, false
	}
	if s == "auto" {
		return 0, true
	}
	n, err := strconv.Atoi(strings.ReplaceAll(s, "_", ""))
	if err != nil || n <= 0 || n > 1<<20 {
		v.errorf(key, "%q is not a positive whole number or \"auto\"", s)
		return 0, false
	}
	return n, true
}
