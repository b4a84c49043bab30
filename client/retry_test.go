package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestIdempotent(t *testing.T) {
	body := func() io.ReadCloser { return io.NopCloser(strings.NewReader("x")) }
	tests := []struct {
		name    string
		method  string
		header  string // a header set on the request
		body    bool   // a body without GetBody
		getBody bool   // a body with GetBody
		want    bool
	}{
		{"GET", "GET", "", false, false, true},
		{"empty method is GET", "", "", false, false, true},
		{"HEAD", "HEAD", "", false, false, true},
		{"OPTIONS", "OPTIONS", "", false, false, true},
		{"PUT replayable", "PUT", "", false, true, true},
		{"PUT not replayable", "PUT", "", true, false, false},
		{"DELETE", "DELETE", "", false, false, true},
		{"POST", "POST", "", false, true, false},
		{"PATCH", "PATCH", "", false, true, false},
		{"POST with Idempotency-Key", "POST", "Idempotency-Key", false, true, true},
		{"POST with X-Idempotency-Key", "POST", "X-Idempotency-Key", false, true, true},
		{"POST with a key, not replayable", "POST", "Idempotency-Key", true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &http.Request{Method: tt.method, Header: http.Header{}}
			if tt.header != "" {
				req.Header[tt.header] = []string{"k1"}
			}
			if tt.body || tt.getBody {
				req.Body = body()
			}
			if tt.getBody {
				req.GetBody = func() (io.ReadCloser, error) { return body(), nil }
			}
			if got := idempotent(req); got != tt.want {
				t.Errorf("idempotent = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestShedStatus(t *testing.T) {
	for code, want := range map[int]bool{200: false, 404: false, 429: true, 500: false, 502: false, 503: true, 504: false} {
		if got := shedStatus(code); got != want {
			t.Errorf("shedStatus(%d) = %v, want %v", code, got, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		value  string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"3", 3 * time.Second, true},
		{" 7 ", 7 * time.Second, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"99999999999", 86400 * time.Second, true},
		{"Sun, 01 Mar 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Sun, 01 Mar 2026 11:59:00 GMT", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			h := http.Header{}
			if tt.value != "" {
				h.Set("Retry-After", tt.value)
			}
			got, ok := retryAfter(h, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("retryAfter(%q) = (%v, %v), want (%v, %v)", tt.value, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	base, limit := 100*time.Millisecond, 5*time.Second
	tests := []struct {
		n    int
		rnd  float64
		want time.Duration
	}{
		{1, 0, 0},
		{1, 0.5, 50 * time.Millisecond},
		{1, 0.999, 99900 * time.Microsecond},
		{2, 0.5, 100 * time.Millisecond},
		{3, 0.5, 200 * time.Millisecond},
		{6, 0.5, 1600 * time.Millisecond},
		{7, 0.5, 2500 * time.Millisecond},  // 6.4 s capped at 5 s
		{60, 0.5, 2500 * time.Millisecond}, // no overflow
	}
	for _, tt := range tests {
		if got := backoff(tt.n, base, limit, tt.rnd); got != tt.want {
			t.Errorf("backoff(%d, rnd %v) = %v, want %v", tt.n, tt.rnd, got, tt.want)
		}
	}
}

func TestSpread(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		rnd  float64
		want time.Duration
	}{
		{time.Second, 0, time.Second},
		{time.Second, 0.5, 1050 * time.Millisecond},
		{0, 0.9, 0},
	} {
		if got := spread(tt.d, tt.rnd); got != tt.want {
			t.Errorf("spread(%v, %v) = %v, want %v", tt.d, tt.rnd, got, tt.want)
		}
	}
}

type countingBody struct {
	io.Reader
	closed bool
}

func (b *countingBody) Close() error { b.closed = true; return nil }

func TestDrain(t *testing.T) {
	tests := []struct {
		name     string
		size     int
		wantLeft int
	}{
		{"short body read to the end", 100, 0},
		{"long body read up to the limit", maxDrain + 10, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bytes.NewReader(make([]byte, tt.size))
			body := &countingBody{Reader: r}
			drain(&http.Response{Body: body})
			if r.Len() != tt.wantLeft || !body.closed {
				t.Errorf("after drain: %d bytes left, closed %v; want %d, true", r.Len(), body.closed, tt.wantLeft)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	resp := func(code int, header ...string) *http.Response {
		r := &http.Response{StatusCode: code, Header: http.Header{}}
		for i := 0; i < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		return r
	}
	tests := []struct {
		name string
		ctx  context.Context
		resp *http.Response
		err  error
		want outcome
	}{
		{"200", context.Background(), resp(200), nil, outcome{accepted: true}},
		{"404 is an answer", context.Background(), resp(404), nil, outcome{accepted: true}},
		{"500 is an answer", context.Background(), resp(500), nil, outcome{accepted: true}},
		{"503 shed", context.Background(), resp(503, "Retry-After", "1"), nil, outcome{}},
		{"503 without Retry-After", context.Background(), resp(503), nil, outcome{failed: true}},
		{"429", context.Background(), resp(429), nil, outcome{}},
		{"502", context.Background(), resp(502), nil, outcome{accepted: true, failed: true}},
		{"504", context.Background(), resp(504), nil, outcome{accepted: true, failed: true}},
		{"connection error", context.Background(), nil, errors.New("connection refused"), outcome{failed: true}},
		{"deadline", context.Background(), nil, context.DeadlineExceeded, outcome{failed: true}},
		{"caller cancelled", canceled, nil, context.Canceled, outcome{accepted: true, ignored: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judge(tt.ctx, tt.resp, tt.err); got != tt.want {
				t.Errorf("judge = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestHostKey(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://API.Example:8080/x", nil)
	if got, want := hostKey(req), "api.example:8080"; got != want {
		t.Errorf("hostKey = %q, want %q", got, want)
	}
	if got := hostKey(&http.Request{}); got != "" {
		t.Errorf("hostKey without URL = %q, want empty", got)
	}
}
