package loadgen_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

// sampleReport runs a deterministic overload in a synctest bubble: a
// server with capacity for 20/s offered 10/s, then a ramp to 60/s, then a
// pause, with two tenants and retries.
func sampleReport(t *testing.T, retry loadgen.RetryMode) *loadgen.Report {
	t.Helper()
	var rep *loadgen.Report
	synctest.Test(t, func(t *testing.T) {
		busyUntil := time.Now()
		one := make(chan struct{}, 1)
		srv := newFakeServer(func(req *http.Request, _ int) (*http.Response, error) {
			one <- struct{}{}
			now := time.Now()
			if busyUntil.After(now) {
				<-one
				return respond(req, 503, "Sluice-Shed", "queue-full", "Retry-After", "1"), nil
			}
			busyUntil = now.Add(50 * time.Millisecond)
			<-one
			time.Sleep(50 * time.Millisecond)
			return respond(req, 200), nil
		})
		var err error
		rep, err = loadgen.Run(t.Context(), loadgen.Config{
			URL: "http://127.0.0.1:3000/?a=1&b=<2>",
			Phases: []loadgen.Phase{
				{Rate: 10, Duration: 2 * time.Second},
				{Rate: 10, RampTo: 60, Duration: 2 * time.Second},
				{Rate: 0, Duration: time.Second},
			},
			HeaderMixes: []loadgen.HeaderMix{{Name: "Sluice-Tenant", Values: []loadgen.Weighted{{Value: "a", Weight: 3}, {Value: "b", Weight: 1}}}},
			Retry:       retry,
			Transport:   srv,
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	})
	rep.Started = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) // the bubble's clock starts in 2000
	return rep
}

func TestWriteSVG(t *testing.T) {
	tests := []struct {
		retry      loadgen.RetryMode
		wantSeries []string
	}{
		{loadgen.RetryNone, []string{"offered", "goodput", "errors", "p99"}},
		{loadgen.RetryBackoff, []string{"offered", "attempts", "goodput", "errors", "p99"}},
	}
	for _, tt := range tests {
		t.Run(tt.retry.String(), func(t *testing.T) {
			rep := sampleReport(t, tt.retry)
			var buf bytes.Buffer
			if err := rep.WriteSVG(&buf); err != nil {
				t.Fatalf("WriteSVG: %v", err)
			}
			dec := xml.NewDecoder(&buf)
			var (
				root       string
				series     []string
				points     = map[string]int{}
				phaseLines int
				texts      []string
			)
			for {
				tok, err := dec.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("not well-formed XML: %v", err)
				}
				switch el := tok.(type) {
				case xml.StartElement:
					if root == "" {
						root = el.Name.Local
					}
					attrs := map[string]string{}
					for _, a := range el.Attr {
						attrs[a.Name.Local] = a.Value
					}
					if name, ok := attrs["data-series"]; ok {
						series = append(series, name)
						points[name] = strings.Count(attrs["d"], "M") + strings.Count(attrs["d"], "L")
					}
					if el.Name.Local == "line" && attrs["stroke-dasharray"] == "3 3" {
						phaseLines++
					}
				case xml.CharData:
					texts = append(texts, string(el))
				}
			}
			if root != "svg" {
				t.Errorf("root element %q, want svg", root)
			}
			if !reflect.DeepEqual(series, tt.wantSeries) {
				t.Errorf("series %v, want %v", series, tt.wantSeries)
			}
			if got, want := points["offered"], len(rep.Series); got != want {
				t.Errorf("offered has %d points, want one per bucket, %d", got, want)
			}
			if got, want := phaseLines, len(rep.Phases)-1; got != want {
				t.Errorf("%d phase boundaries drawn, want %d", got, want)
			}
			all := strings.Join(texts, "|")
			for _, want := range []string{"http://127.0.0.1:3000/?a=1&b=<2>", "1: 10/s", "2: 10->60/s", "3: 0/s", "time (s)", "requests per second", "p99 latency"} {
				if !strings.Contains(all, want) {
					t.Errorf("chart text lacks %q", want)
				}
			}
		})
	}
}

func TestWriteTable(t *testing.T) {
	rep := sampleReport(t, loadgen.RetryNone)
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatalf("WriteTable: %v", err)
	}
	got := buf.String()
	t.Logf("\n%s", got)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	// A settings line, a blank, the header, three phases, the total, a
	// blank, the class header and two classes.
	if len(lines) != 11 {
		t.Fatalf("got %d lines, want 11:\n%s", len(lines), got)
	}
	header := lines[2]
	col := strings.Index(header, "goodput/s") + len("goodput/s")
	for _, row := range lines[3:7] {
		// Figures are right-aligned under their heading.
		if len(row) < col || row[col-1] == ' ' || (len(row) > col && row[col] != ' ') {
			t.Errorf("goodput column misaligned in %q (heading ends at %d)", row, col)
		}
	}
	for _, want := range []string{
		"1 10/s ", "2 10->60/s ", "3 0/s ", "total ", "Sluice-Tenant=a ", "Sluice-Tenant=b ",
		"503:queue-full=", "100.0%", "50.0ms", "timeout 1s, keep-alive, retry none",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	if strings.Contains(got, " \n") {
		t.Error("table has trailing spaces")
	}
}

func TestWriteJSONRoundTrip(t *testing.T) {
	rep := sampleReport(t, loadgen.RetryRetryAfter)
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	for _, key := range []string{`"goodput_rps"`, `"p99_ns"`, `"503:queue-full"`, `"series"`, `"retry": "retry-after"`} {
		if !bytes.Contains(buf.Bytes(), []byte(key)) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	var back loadgen.Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if !reflect.DeepEqual(&back, rep) {
		t.Errorf("round trip changed the report:\n got %+v\nwant %+v", back, *rep)
	}
}
