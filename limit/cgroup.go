package limit

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"
)

// cgroupCPUs returns the CPU bandwidth quota of the process's cgroup in
// CPUs (1.5 for "150000 100000"), or 0 when there is none.
//
// It reads /proc/self/cgroup, then the quota of every cgroup from the
// process's own up to the root, and returns the lowest: a limit set on a
// parent (a Kubernetes pod around its containers) binds as much as one on
// the leaf. cgroup v2 (cpu.max, "max" meaning none) is looked up under
// /sys/fs/cgroup, v1 (cpu.cfs_quota_us, -1 meaning none, over
// cpu.cfs_period_us) under /sys/fs/cgroup/cpu; other mount points are not
// searched. A cgroup whose files do not exist (a namespaced view of a path
// outside the container, a hierarchy without the cpu controller) is
// skipped.
func cgroupCPUs(readFile func(string) ([]byte, error)) (float64, error) {
	b, err := readFile("/proc/self/cgroup")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil // not Linux
	}
	if err != nil {
		return 0, fmt.Errorf("limit: cgroup: %w", err)
	}
	lowest := math.Inf(1)
	for line := range strings.Lines(string(b)) {
		// hierarchy-ID:controller-list:cgroup-path
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			continue
		}
		var quota func(dir string) (float64, error)
		var root string
		switch {
		case f[0] == "0" && f[1] == "":
			quota, root = func(dir string) (float64, error) { return cgroupV2Quota(readFile, dir) }, "/sys/fs/cgroup"
		case hasController(f[1], "cpu"):
			quota, root = func(dir string) (float64, error) { return cgroupV1Quota(readFile, dir) }, "/sys/fs/cgroup/cpu"
		default:
			continue
		}
		for p := path.Clean(f[2]); ; p = path.Dir(p) {
			q, err := quota(path.Join(root, p))
			if err != nil {
				return 0, err
			}
			if q > 0 {
				lowest = min(lowest, q)
			}
			if p == "/" {
				break
			}
		}
	}
	if math.IsInf(lowest, 1) {
		return 0, nil
	}
	return lowest, nil
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// cgroupV2Quota reads dir/cpu.max: "$MAX $PERIOD", $MAX "max" for none.
// It returns 0 for none or a missing file.
func cgroupV2Quota(readFile func(string) ([]byte, error), dir string) (float64, error) {
	name := dir + "/cpu.max"
	b, err := readFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("limit: cgroup: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, fmt.Errorf("limit: cgroup: %s: want \"$MAX $PERIOD\", got %q", name, b)
	}
	if f[0] == "max" {
		return 0, nil
	}
	return quotaRatio(name, f[0], f[1])
}

// cgroupV1Quota reads dir/cpu.cfs_quota_us (-1 for none) over
// dir/cpu.cfs_period_us. It returns 0 for none or missing files.
func cgroupV1Quota(readFile func(string) ([]byte, error), dir string) (float64, error) {
	name := dir + "/cpu.cfs_quota_us"
	q, err := readFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("limit: cgroup: %w", err)
	}
	if strings.TrimSpace(string(q)) == "-1" {
		return 0, nil
	}
	p, err := readFile(dir + "/cpu.cfs_period_us")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("limit: cgroup: %w", err)
	}
	return quotaRatio(name, strings.TrimSpace(string(q)), strings.TrimSpace(string(p)))
}

func quotaRatio(name, quota, period string) (float64, error) {
	q, err1 := strconv.ParseInt(quota, 10, 64)
	p, err2 := strconv.ParseInt(period, 10, 64)
	if err := errors.Join(err1, err2); err != nil || q <= 0 || p <= 0 {
		return 0, fmt.Errorf("limit: cgroup: %s: bad quota %q over period %q", name, quota, period)
	}
	return float64(q) / float64(p), nil
}
