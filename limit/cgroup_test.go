package limit

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// files is a fake file system for cgroupCPUs.
type files map[string]string

func (f files) read(name string) ([]byte, error) {
	if s, ok := f[name]; ok {
		if s == "EACCES" {
			return nil, fs.ErrPermission
		}
		return []byte(s), nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func TestCgroupCPUs(t *testing.T) {
	tests := []struct {
		name    string
		files   files
		want    float64
		wantErr string
	}{
		{"no /proc (not Linux)", files{}, 0, ""},
		{
			"v2 container, 1.5 CPUs",
			files{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/cpu.max": "150000 100000\n"},
			1.5, "",
		},
		{
			"v2 no limit",
			files{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/cpu.max": "max 100000\n"},
			0, "",
		},
		{
			"v2 root without cpu.max",
			files{"/proc/self/cgroup": "0::/\n"},
			0, "",
		},
		{
			"v2 limit on a parent binds the leaf",
			files{
				"/proc/self/cgroup":                        "0::/kubepods/pod1/ctr\n",
				"/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max": "max 100000\n",
				"/sys/fs/cgroup/kubepods/pod1/cpu.max":     "50000 100000\n",
				"/sys/fs/cgroup/kubepods/cpu.max":          "max 100000\n",
			},
			0.5, "",
		},
		{
			"v2 lowest along the path wins",
			files{
				"/proc/self/cgroup":          "0::/a/b\n",
				"/sys/fs/cgroup/a/b/cpu.max": "300000 100000",
				"/sys/fs/cgroup/a/cpu.max":   "200000 100000",
				"/sys/fs/cgroup/cpu.max":     "400000 100000",
			},
			2, "",
		},
		{
			"v2 path outside the namespace falls back to the root",
			files{"/proc/self/cgroup": "0::/../elsewhere\n", "/sys/fs/cgroup/cpu.max": "100000 100000"},
			1, "",
		},
		{
			"v1 quota",
			files{
				"/proc/self/cgroup":                      "4:memory:/x\n2:cpu,cpuacct:/x\n",
				"/sys/fs/cgroup/cpu/x/cpu.cfs_quota_us":  "250000\n",
				"/sys/fs/cgroup/cpu/x/cpu.cfs_period_us": "100000\n",
			},
			2.5, "",
		},
		{
			"v1 no limit (this machine)",
			files{
				"/proc/self/cgroup":                    "1:cpu:/\n0::/\n",
				"/sys/fs/cgroup/cpu/cpu.cfs_quota_us":  "-1\n",
				"/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
			},
			0, "",
		},
		{
			"v1 cpuacct alone is not cpu",
			files{
				"/proc/self/cgroup":                    "2:cpuacct:/\n",
				"/sys/fs/cgroup/cpu/cpu.cfs_quota_us":  "100000\n",
				"/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
			},
			0, "",
		},
		{
			"hybrid: the lower of v1 and v2",
			files{
				"/proc/self/cgroup":                    "1:cpu:/\n0::/\n",
				"/sys/fs/cgroup/cpu/cpu.cfs_quota_us":  "300000\n",
				"/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
				"/sys/fs/cgroup/cpu.max":               "200000 100000\n",
			},
			2, "",
		},
		{
			"malformed cpu.max",
			files{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/cpu.max": "lots\n"},
			0, `cpu.max: want "$MAX $PERIOD", got "lots\n"`,
		},
		{
			"zero period",
			files{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/cpu.max": "100000 0\n"},
			0, `bad quota "100000" over period "0"`,
		},
		{
			"unreadable cpu.max",
			files{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/cpu.max": "EACCES"},
			0, "permission denied",
		},
		{
			"unreadable /proc/self/cgroup",
			files{"/proc/self/cgroup": "EACCES"},
			0, "permission denied",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cgroupCPUs(tt.files.read)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "limit: cgroup: ") {
					t.Errorf("cgroupCPUs() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("cgroupCPUs() = %v, %v; want %v, nil", got, err, tt.want)
			}
		})
	}
}

// TestCgroupCPUsHere reads this machine's cgroup files: whatever they say,
// they must parse.
func TestCgroupCPUsHere(t *testing.T) {
	got, err := cgroupCPUs(os.ReadFile)
	if err != nil && !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("cgroupCPUs(os.ReadFile) error: %v", err)
	}
	if got < 0 {
		t.Errorf("cgroupCPUs(os.ReadFile) = %v, want >= 0", got)
	}
	t.Logf("this machine's cgroup CPU quota: %v (0 = none)", got)
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
