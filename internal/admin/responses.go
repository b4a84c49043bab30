package admin

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Responses counts the responses a handler writes, by status code: every
// answer of the front, the workers' and sluice's own (503 and 429 sheds,
// 502, 504). The zero value is ready to use; it is safe for concurrent use.
type Responses struct {
	// counts[code-100] for codes 100..599; other codes count as 0.
	counts [500]atomic.Uint64
	other  atomic.Uint64
}

// Wrap returns h counting its responses. The status is the first one
// written (WriteHeader, or 200 on the first Write, or 200 if h writes
// nothing at all, as net/http sends). The wrapper keeps flushing,
// hijacking and deadlines reachable through http.ResponseController.
func (rs *Responses) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		defer func() { rs.count(sw.status) }()
		h.ServeHTTP(sw, r)
	})
}

func (rs *Responses) count(code int) {
	if code == 0 {
		code = http.StatusOK
	}
	if code >= 100 && code < 600 {
		rs.counts[code-100].Add(1)
		return
	}
	rs.other.Add(1)
}

// statusWriter records the status of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	// 1xx responses are interim (103 Early Hints): the final status follows.
	// 101 Switching Protocols is final.
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Flush is for handlers that assert http.Flusher.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack is for upgrades (WebSockets): the handler answers on the
// connection itself, which in sluice means 101 Switching Protocols, a
// status the wrapper would not see otherwise.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

// Collector returns the collector of rs: with namespace "sluice",
// sluice_requests_total{code}, one series per status code seen (code
// "other" for codes outside 100..599).
func (rs *Responses) Collector(namespace string) prometheus.Collector {
	return &responsesCollector{rs: rs, desc: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "requests_total"),
		"Requests answered, by HTTP status code.", []string{"code"}, nil)}
}

type responsesCollector struct {
	rs   *Responses
	desc *prometheus.Desc
}

func (c *responsesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *responsesCollector) Collect(ch chan<- prometheus.Metric) {
	for i := range c.rs.counts {
		if n := c.rs.counts[i].Load(); n > 0 {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), strconv.Itoa(i+100))
		}
	}
	if n := c.rs.other.Load(); n > 0 {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), "other")
	}
}
