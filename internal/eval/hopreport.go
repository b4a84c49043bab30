package eval

import (
	"fmt"
	"strings"
)

// HopRow is scenario hop-cpu's summary of one setup at one way of loading
// it: medians over the rounds, and the ratio to nginx -> HAProxy measured
// in the same round (the median of the rounds' ratios).
type HopRow struct {
	Setup    string  `json:"setup"`
	Mode     string  `json:"mode"`
	Body     string  `json:"body"`
	Client   string  `json:"client"`
	Multiple float64 `json:"multiple,omitempty"`
	Offered  float64 `json:"offered_rps,omitempty"` // the fixed rate, or the overload's, median
	Rounds   int     `json:"rounds"`
	// Rate is the median of successes per second; CPUPer1000 of the
	// front's CPU per 1,000 answered requests, ms; Share of the cores the
	// front took.
	Rate       float64 `json:"rate_rps"`
	CPUPer1000 float64 `json:"cpu_per_1000_ms"`
	Share      float64 `json:"front_cores"`
	Errors     int64   `json:"errors"`
	Shed       int64   `json:"shed"`
	// CPURatio and RateRatio are this setup's figure over nginx ->
	// HAProxy's in the same round, median over the rounds; 0 for nginx ->
	// HAProxy itself.
	CPURatio  float64 `json:"cpu_ratio_to_nginx_haproxy,omitempty"`
	RateRatio float64 `json:"rate_ratio_to_nginx_haproxy,omitempty"`
	// MaxOthers is the most CPU the rest of the machine took during one of
	// the rounds, in cores: how noisy the figures are.
	MaxOthers float64 `json:"max_others_cores"`
}

// hopKey identifies the points a HopRow summarises.
type hopKey struct {
	setup, mode, body, client string
	multiple                  float64
}

func keyOf(p HopPoint) hopKey { return hopKey{p.Setup, p.Mode, p.Body, p.Client, p.Multiple} }

// SummarizeHop folds points into rows, in the order their first point came.
func SummarizeHop(points []HopPoint) []HopRow {
	var keys []hopKey
	byKey := map[hopKey][]HopPoint{}
	for _, p := range points {
		k := keyOf(p)
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], p)
	}
	var rows []HopRow
	for _, k := range keys {
		ps := byKey[k]
		r := HopRow{Setup: k.setup, Mode: k.mode, Body: k.body, Client: k.client, Multiple: k.multiple, Rounds: len(ps)}
		var rates, cpus, shares, offered, cpuRatios, rateRatios []float64
		for _, p := range ps {
			rates = append(rates, p.Rate)
			offered = append(offered, p.Offered)
			cpus = append(cpus, p.CPUPer1000())
			shares = append(shares, p.Share())
			r.Errors += p.Errors
			r.Shed += p.Shed
			r.MaxOthers = max(r.MaxOthers, p.Others)
			if k.setup == HopNginxHA {
				continue
			}
			ref := k
			ref.setup = HopNginxHA
			for _, q := range byKey[ref] {
				if q.Round != p.Round {
					continue
				}
				if c := q.CPUPer1000(); c > 0 {
					cpuRatios = append(cpuRatios, p.CPUPer1000()/c)
				}
				if q.Rate > 0 {
					rateRatios = append(rateRatios, p.Rate/q.Rate)
				}
			}
		}
		r.Rate, r.CPUPer1000, r.Share, r.Offered = Median(rates), Median(cpus), Median(shares), Median(offered)
		if len(cpuRatios) > 0 {
			r.CPURatio = Median(cpuRatios)
		}
		if len(rateRatios) > 0 {
			r.RateRatio = Median(rateRatios)
		}
		rows = append(rows, r)
	}
	return rows
}

// HopMarkdown renders the summary: the proxied requests (fixed rate and
// closed loop), then the overload.
func HopMarkdown(rows []HopRow) string {
	var b strings.Builder
	t := &Table{Header: []string{"setup", "body", "client", "load", "median responses/s", "front CPU per 1,000 requests", "CPU vs nginx -> HAProxy", "responses/s vs nginx -> HAProxy", "errors", "noise (others, cores)"}}
	for _, r := range rows {
		if r.Mode == "overload" {
			continue
		}
		load := fmtRate(r.Offered) + "/s"
		if r.Mode == "closed" {
			load = fmt.Sprintf("closed loop, %d clients", HopCPUClients)
		}
		t.Add(r.Setup, r.Body, r.Client, load, fmtRate(r.Rate), fmt.Sprintf("%.0f ms", r.CPUPer1000),
			ratio(r.CPURatio), ratio(r.RateRatio), fmt.Sprint(r.Errors), fmt.Sprintf("%.2f", r.MaxOthers))
	}
	b.WriteString(t.Markdown())
	o := &Table{Header: []string{"setup", "offered", "goodput/s", "shed", "front cores", "front CPU per 1,000 answered", "CPU vs nginx -> HAProxy", "errors", "noise (others, cores)"}}
	for _, r := range rows {
		if r.Mode != "overload" {
			continue
		}
		o.Add(r.Setup, multipleName(r.Multiple), fmtRate(r.Rate), fmt.Sprint(r.Shed), fmt.Sprintf("%.3f", r.Share),
			fmt.Sprintf("%.0f ms", r.CPUPer1000), ratio(r.CPURatio), fmt.Sprint(r.Errors), fmt.Sprintf("%.2f", r.MaxOthers))
	}
	if len(o.Rows) > 0 {
		b.WriteString("\n")
		b.WriteString(o.Markdown())
	}
	return b.String()
}

func ratio(f float64) string {
	if f == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", f)
}

func (s *Suite) writeHopCPU(info HopInfo, points []HopPoint) error {
	rows := SummarizeHop(points)
	f := hopFile{Scenario: ScenarioHopCPU, Environment: s.env, Info: info, Points: points, Summary: rows}
	if err := s.writeJSON(ScenarioHopCPU+".json", f); err != nil {
		return err
	}
	return s.writeFile(ScenarioHopCPU+".md", []byte(HopMarkdown(rows)))
}
