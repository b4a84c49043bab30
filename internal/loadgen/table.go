package loadgen

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteTable writes r as a fixed-width text table: a line on the run, one
// row per phase and a total, then one row per class when mixes were used.
func (r *Report) WriteTable(w io.Writer) error {
	s := r.Settings
	keep := "keep-alive"
	if !s.KeepAlive {
		keep = "new connection per request"
	}
	retry := s.Retry
	if s.Retry != RetryNone.String() {
		retry += fmt.Sprintf(" (max %d attempts)", s.MaxAttempts)
	}
	status := ""
	if r.Interrupted {
		status = " [interrupted]"
	}
	if _, err := fmt.Fprintf(w, "%s  timeout %v, %s, retry %s, elapsed %v%s\n\n",
		r.URL, s.Timeout, keep, retry, r.Elapsed.Round(time.Millisecond), status); err != nil {
		return err
	}
	rows := [][]string{tableHeader("phase")}
	for i, p := range r.Phases {
		rows = append(rows, tableRow(fmt.Sprintf("%d %s", i+1, p.Name), p.Stats))
	}
	rows = append(rows, tableRow("total", r.Total))
	if err := writeColumns(w, rows); err != nil {
		return err
	}
	if len(r.Classes) == 0 {
		return nil
	}
	rows = [][]string{tableHeader("class")}
	for _, c := range r.Classes {
		rows = append(rows, tableRow(c.Name, c.Stats))
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	return writeColumns(w, rows)
}

func tableHeader(first string) []string {
	return []string{first, "offered/s", "attempts/s", "goodput/s", "delivered/s", "success", "p50", "p90", "p99", "max", "errors"}
}

func tableRow(name string, s Stats) []string {
	lat := func(d time.Duration) string {
		if s.Successes == 0 {
			return "-"
		}
		return formatLatency(d)
	}
	return []string{
		name,
		formatCount(s.OfferedRate),
		formatCount(s.AttemptRate),
		formatCount(s.Goodput),
		formatCount(s.Delivered),
		strconv.FormatFloat(100*s.SuccessRatio, 'f', 1, 64) + "%",
		lat(s.Latency.P50), lat(s.Latency.P90), lat(s.Latency.P99), lat(s.Latency.Max),
		formatErrors(s.Errors),
	}
}

// writeColumns pads cells to their column's width: the first and last
// columns (names and error lists) to the left, the figures to the right.
func writeColumns(w io.Writer, rows [][]string) error {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		var line strings.Builder
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			switch {
			case i == 0:
				line.WriteString(cell + pad)
			case i == len(row)-1:
				line.WriteString("  " + cell)
			default:
				line.WriteString("  " + pad + cell)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatErrors lists error kinds by count, largest first: "503:codel=12 timeout=3".
func formatErrors(errs map[string]int64) string {
	if len(errs) == 0 {
		return "-"
	}
	kinds := make([]string, 0, len(errs))
	for k := range errs {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		return cmp.Or(cmp.Compare(errs[b], errs[a]), strings.Compare(a, b))
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = k + "=" + strconv.FormatInt(errs[k], 10)
	}
	return strings.Join(parts, " ")
}

// formatLatency prints a latency with three significant figures at most.
func formatLatency(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return strconv.FormatInt(d.Microseconds(), 10) + "µs"
	case d < 10*time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + "ms"
	case d < 100*time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) + "ms"
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 0, 64) + "ms"
	default:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
	}
}

// formatCount prints a rate: one decimal below 1000, none above.
func formatCount(f float64) string {
	if f < 1000 {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'f', 0, 64)
}
