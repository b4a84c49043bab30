package sluicegrpc

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptrace"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/admission"
)

// The client package keeps its retry budget, backoff, throttle and breaker
// unexported behind client.Transport, an http.RoundTripper. Rather than
// copy them, ClientInterceptor drives a Transport whose base RoundTripper is
// bridge: each attempt the Transport decides to make becomes one gRPC
// attempt, and the attempt's status becomes the HTTP answer that means the
// same to the Transport:
//
//	OK, and answers (NOT_FOUND, INTERNAL, ...)       200: an accept, a success
//	shed: RESOURCE_EXHAUSTED or UNAVAILABLE with     429 or 503, Retry-After the
//	  sluice-shed or grpc-retry-pushback-ms >= 0       pushback: retried; neither
//	                                                   an accept nor a failure
//	UNAVAILABLE, DEADLINE_EXCEEDED (otherwise)       an error: a failure, not retried
//	CANCELLED by the caller's context                an error wrapping context.Canceled: ignored
//
// Retry-After has whole seconds, so a pushback is rounded up to the next
// second; ServerInterceptor's pushback is whole seconds already.

// attempter makes one attempt of a call and returns its trailer and gRPC
// error.
type attempter interface {
	attempt(ctx context.Context) (metadata.MD, error)
}

type attempterKey struct{}

// bridge is the Transport's base RoundTripper: see above.
type bridge struct{}

var _ http.RoundTripper = bridge{}

func (bridge) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	a, ok := ctx.Value(attempterKey{}).(attempter)
	if !ok {
		return nil, errors.New("sluicegrpc: a request that is no gRPC call")
	}
	// From here the call may reach the server, so an error must not be
	// retried as one that never left: grpc-go retries those itself.
	if tr := httptrace.ContextClientTrace(ctx); tr != nil && tr.WroteHeaders != nil {
		tr.WroteHeaders()
	}
	if p := r.Header.Get(admission.HeaderPriority); p != "" {
		md, ok := metadata.FromOutgoingContext(ctx) // a copy, ours to change
		if !ok {
			md = make(metadata.MD, 1)
		}
		md.Set(MetadataPriority, p)
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	trailer, err := a.attempt(ctx)
	return answer(r, trailer, err)
}

// attemptError carries an attempt's gRPC error through the Transport.
type attemptError struct {
	rpc   error
	cause error // context.Canceled when the caller gave up, for the breaker
}

func (e *attemptError) Error() string { return e.rpc.Error() }
func (e *attemptError) Unwrap() error { return e.cause }

// answer maps an attempt's outcome to what it means to the Transport (see
// the table above).
func answer(r *http.Request, trailer metadata.MD, err error) (*http.Response, error) {
	if err == nil {
		return response(r, http.StatusOK, ""), nil
	}
	code := status.Code(err)
	if code == codes.ResourceExhausted || code == codes.Unavailable {
		if resp, ok := shedResponse(r, code, trailer); ok {
			return resp, nil
		}
	}
	switch code {
	case codes.Canceled:
		if errors.Is(r.Context().Err(), context.Canceled) {
			return nil, &attemptError{rpc: err, cause: context.Canceled}
		}
	case codes.Unavailable, codes.DeadlineExceeded:
		return nil, &attemptError{rpc: err}
	}
	return response(r, http.StatusOK, ""), nil
}

// shedResponse returns the answer to a call the server shed, and false
// when the trailer does not say it was shed. A negative pushback is gRFC
// A6's "do not retry": an answer.
func shedResponse(r *http.Request, code codes.Code, trailer metadata.MD) (*http.Response, bool) {
	_, shed := trailer[TrailerShed]
	ms, hasPushback := pushback(trailer)
	if hasPushback && ms < 0 {
		return response(r, http.StatusOK, ""), true
	}
	if !shed && !hasPushback {
		return nil, false
	}
	st := http.StatusServiceUnavailable
	if code == codes.ResourceExhausted {
		st = http.StatusTooManyRequests
	}
	after := ""
	if hasPushback {
		after = strconv.FormatInt(int64(math.Ceil(float64(ms)/1000)), 10)
	}
	return response(r, st, after), true
}

// pushback parses the grpc-retry-pushback-ms trailer; as grpc-go does, a
// malformed or repeated value means "do not retry" (-1).
func pushback(trailer metadata.MD) (ms int, ok bool) {
	vs := trailer[TrailerPushback]
	switch len(vs) {
	case 0:
		return 0, false
	case 1:
		if ms, err := strconv.Atoi(vs[0]); err == nil && ms >= 0 {
			return ms, true
		}
	}
	return -1, true
}

func response(r *http.Request, code int, retryAfter string) *http.Response {
	h := make(http.Header, 1)
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return &http.Response{
		Status:     strconv.Itoa(code) + " " + http.StatusText(code),
		StatusCode: code,
		Proto:      "HTTP/2.0",
		ProtoMajor: 2,
		Header:     h,
		Body:       http.NoBody,
		Request:    r,
	}
}
