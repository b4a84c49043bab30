package chart

import (
	"encoding/xml"
	"math"
	"strconv"
	"strings"
)

// niceScale returns an axis top at or above v and a tick step, both on the
// 1-2-5 ladder, for about five ticks.
func niceScale(v float64) (top, step float64) {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1, 0.2
	}
	step = niceStep(v / 5)
	return math.Ceil(v/step) * step, step
}

// niceStep rounds v up to 1, 2 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	switch n := v / mag; {
	case n <= 1:
		return mag
	case n <= 2:
		return 2 * mag
	case n <= 5:
		return 5 * mag
	default:
		return 10 * mag
	}
}

// linearTicks returns the multiples of a 1-2-5 step from lo to hi, about n
// of them, and the step.
func linearTicks(lo, hi float64, n int) (ticks []float64, step float64) {
	step = niceStep((hi - lo) / float64(n))
	for t := math.Floor(lo/step) * step; t <= hi+step/1000; t += step {
		if t >= lo-step/1000 {
			ticks = append(ticks, t)
		}
	}
	return ticks, step
}

// tickLabel prints a tick of a stepped axis with as many decimals as the
// step needs, so that the labels of one axis line up (0.0, 0.5, 1.0).
func tickLabel(v, step float64) string {
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// fmtTick prints a tick the caller chose in its shortest form (0.5, 8).
func fmtTick(v float64) string {
	if math.Abs(v-math.Round(v)) < 1e-9 {
		return strconv.FormatInt(int64(math.Round(v)), 10)
	}
	// Sums like 0.1+0.2 carry error (0.30000000000000004).
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}

// esc escapes s for SVG text and attribute values.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
