package loadgen

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParsePhases parses a comma-separated list of phases, each "RATE:DURATION"
// (constant) or "FROM->TO:DURATION" (a linear ramp), rates in requests per
// second and durations in Go syntax: "100:10s,200:10s,400:10s" or
// "100->800:30s". A rate of 0 is a pause.
func ParsePhases(s string) ([]Phase, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("loadgen: empty phase list")
	}
	var phases []Phase
	for seg := range strings.SplitSeq(s, ",") {
		p, err := parsePhase(strings.TrimSpace(seg))
		if err != nil {
			return nil, err
		}
		phases = append(phases, p)
	}
	return phases, nil
}

func parsePhase(seg string) (Phase, error) {
	rates, dur, ok := strings.Cut(seg, ":")
	if !ok {
		return Phase{}, fmt.Errorf("loadgen: phase %q: want RATE:DURATION or FROM->TO:DURATION", seg)
	}
	d, err := time.ParseDuration(dur)
	if err != nil || d <= 0 {
		return Phase{}, fmt.Errorf("loadgen: phase %q: duration %q: want a positive Go duration such as 10s", seg, dur)
	}
	from, to, ramp := strings.Cut(rates, "->")
	p := Phase{Duration: d}
	if p.Rate, err = parseRate(from); err != nil {
		return Phase{}, fmt.Errorf("loadgen: phase %q: %w", seg, err)
	}
	if ramp {
		if p.RampTo, err = parseRate(to); err != nil {
			return Phase{}, fmt.Errorf("loadgen: phase %q: %w", seg, err)
		}
		if p.RampTo == 0 {
			// Phase.RampTo zero means "constant", so a ramp cannot end at 0.
			return Phase{}, fmt.Errorf("loadgen: phase %q: a ramp must end above 0 (end at 1, or add a 0:DURATION pause)", seg)
		}
	}
	return p, nil
}

func parseRate(s string) (float64, error) {
	r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !finiteNonNeg(r) {
		return 0, fmt.Errorf("rate %q: want a number >= 0", s)
	}
	return r, nil
}

// ParseWeights parses a comma-separated mix of "VALUE<sep>WEIGHT" items,
// such as "a=90,b=10" with sep '=' or "cpu=5:90,cpu=50:10" with sep ':'.
// The value is split from its weight at the last sep; an item without
// sep has weight 1.
func ParseWeights(s string, sep byte) ([]Weighted, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("loadgen: empty mix")
	}
	var ws []Weighted
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		w := Weighted{Value: item, Weight: 1}
		if i := strings.LastIndexByte(item, sep); i >= 0 {
			weight, err := strconv.ParseFloat(item[i+1:], 64)
			if err != nil || !finiteNonNeg(weight) {
				return nil, fmt.Errorf("loadgen: mix item %q: weight %q: want a number >= 0", item, item[i+1:])
			}
			w = Weighted{Value: item[:i], Weight: weight}
		}
		if w.Value == "" {
			return nil, fmt.Errorf("loadgen: mix item %q: empty value", item)
		}
		ws = append(ws, w)
	}
	if err := validateWeights(ws); err != nil {
		return nil, fmt.Errorf("loadgen: mix %q: %w", s, err)
	}
	return ws, nil
}

// formatRate prints a rate without trailing zeros: 100, 12.5.
func formatRate(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }
