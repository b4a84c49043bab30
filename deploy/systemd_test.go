package deploy

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/config"
)

// unit is a systemd unit file: each key's values, in order, by section.
type unit map[string]map[string][]string

func readUnit(t *testing.T, file string) unit {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s: not a key=value in a section: %q", file, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

// value is the last value of a key, as systemd reads it; "" when unset.
func (u unit) value(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

var timespanPart = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*([a-z]*)`)

// timespan parses a systemd time span: "45s", "1min 30s", "2m", or a bare
// number of seconds.
func timespan(s string) (time.Duration, error) {
	units := map[string]time.Duration{
		"": time.Second, "ms": time.Millisecond, "msec": time.Millisecond,
		"s": time.Second, "sec": time.Second, "second": time.Second, "seconds": time.Second,
		"m": time.Minute, "min": time.Minute, "minute": time.Minute, "minutes": time.Minute,
		"h": time.Hour, "hr": time.Hour, "hour": time.Hour, "hours": time.Hour,
	}
	parts := timespanPart.FindAllStringSubmatch(s, -1)
	if len(parts) == 0 || strings.TrimSpace(timespanPart.ReplaceAllString(s, "")) != "" {
		return 0, fmt.Errorf("%q: not a time span", s)
	}
	var d time.Duration
	for _, p := range parts {
		n, err := strconv.ParseFloat(p[1], 64)
		u, ok := units[p[2]]
		if err != nil || !ok {
			return 0, fmt.Errorf("%q: not a time span", s)
		}
		d += time.Duration(n * float64(u))
	}
	return d, nil
}

func TestTimespan(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"45s": 45 * time.Second, "45": 45 * time.Second, "1min 30s": 90 * time.Second,
		"2m": 2 * time.Minute, "500ms": 500 * time.Millisecond,
	} {
		if got, err := timespan(in); err != nil || got != want {
			t.Errorf("timespan(%q): got %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "infinity", "45 parsecs"} {
		if _, err := timespan(in); err == nil {
			t.Errorf("timespan(%q): no error", in)
		}
	}
}

func TestSystemdUnit(t *testing.T) {
	u := readUnit(t, "systemd/sluice.service")
	svc := u["Service"]
	if svc == nil {
		t.Fatal("no [Service]")
	}
	// The config the unit runs is the one shipped beside it.
	argv := strings.Fields(u.value("Service", "ExecStart"))
	i := slices.Index(argv, "-c")
	if len(argv) < 2 || filepath.Base(argv[0]) != "sluice" || argv[1] != "serve" || i < 0 || i+1 == len(argv) {
		t.Fatalf("ExecStart %q: want sluice serve -c FILE", argv)
	}
	if argv[i+1] != "/etc/sluice/sluice.yaml" {
		t.Errorf("ExecStart reads %s; the shipped systemd/sluice.yaml installs as /etc/sluice/sluice.yaml", argv[i+1])
	}
	data, err := os.ReadFile("systemd/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := config.ParseWith("systemd/sluice.yaml", data, config.Overrides{})
	if err != nil {
		t.Fatalf("systemd/sluice.yaml does not validate:\n%v", err)
	}
	for _, w := range l.Warnings {
		t.Errorf("systemd/sluice.yaml: %v", w)
	}

	// SIGTERM to sluice alone, which stops its workers in order; SIGKILL
	// to the whole cgroup only past TimeoutStopSec, which must outlast
	// the worst-case shutdown.
	for key, want := range map[string]string{
		"KillMode": "mixed", "KillSignal": "SIGTERM", "ExecReload": "/bin/kill -HUP $MAINPID",
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "PrivateTmp": "yes",
		"CapabilityBoundingSet": "", "RestrictSUIDSGID": "yes",
	} {
		if _, set := svc[key]; !set || u.value("Service", key) != want {
			t.Errorf("%s: got %q, want %q", key, u.value("Service", key), want)
		}
	}
	if u.value("Service", "User") == "" && u.value("Service", "DynamicUser") != "yes" {
		t.Error("no User (or DynamicUser): sluice would run as root")
	}
	stop, err := timespan(u.value("Service", "TimeoutStopSec"))
	if err != nil {
		t.Fatalf("TimeoutStopSec: %v", err)
	}
	if need := worstCaseShutdown(l.Config); stop <= need {
		t.Errorf("TimeoutStopSec %v: want more than the worst-case shutdown %v", stop, need)
	}
	if u.value("Service", "MemoryDenyWriteExecute") == "yes" {
		t.Error("MemoryDenyWriteExecute=yes: Node.js's JIT cannot run")
	}
}

// TestSystemdVerify has systemd itself read the unit, where
// systemd-analyze is installed, with ExecStart pointed at a built sluice
// (verify wants an executable there).
func TestSystemdVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	data, err := os.ReadFile("systemd/sluice.service")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "/usr/local/bin/sluice", sluiceBin(t))
	file := filepath.Join(t.TempDir(), "sluice.service")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--man=no", file).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
