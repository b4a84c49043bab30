package demo

import (
	"os"
	"strconv"
	"strings"
)

// LoadAverage returns the machine's one-minute load average, or -1 if it
// is unknown (not Linux). A measurement of capacity on a busy machine
// measures the machine: `sluice demo` says so when the load is high.
func LoadAverage() float64 { return loadAverage("/proc/loadavg") }

// loadAverage is LoadAverage read from path, in /proc/loadavg's format.
func loadAverage(path string) float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
