package sluicegrpc_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/client"
)

// clientStream is a scripted stream: one message, then its end.
type clientStream struct {
	grpc.ClientStream
	ctx     context.Context
	end     outcome
	sendErr error
	recvd   int
}

func (s *clientStream) Context() context.Context { return s.ctx }
func (s *clientStream) SendMsg(any) error        { return s.sendErr }
func (s *clientStream) Trailer() metadata.MD     { return metadata.Pairs(s.end.trailer...) }
func (s *clientStream) RecvMsg(any) error {
	s.recvd++
	switch {
	case s.recvd == 1:
		return nil
	case s.end.code == codes.OK:
		return io.EOF
	}
	return status.Error(s.end.code, "scripted")
}

// streamer opens scripted streams and counts them.
type streamer struct {
	opened  int
	openErr error
	end     outcome
	sendErr error
}

func (f *streamer) stream(ctx context.Context, _ *grpc.StreamDesc, _ *grpc.ClientConn, _ string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
	f.opened++
	if f.openErr != nil {
		return nil, f.openErr
	}
	return &clientStream{ctx: ctx, end: f.end, sendErr: f.sendErr}, nil
}

var watchDesc = &grpc.StreamDesc{StreamName: "Watch", ServerStreams: true}

// readAll reads s to its end and returns the end's error (nil for io.EOF).
func readAll(s grpc.ClientStream) error {
	for {
		if err := s.RecvMsg(nil); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// A stream's end is judged as a unary call's result, and counted by the
// time RecvMsg returns it: five that end UNAVAILABLE open the breaker, and
// the sixth is refused before it is opened.
func TestClientStreamEndsFeedTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc := conn(t)
		ci := newInterceptor(t, client.Options{ThrottleK: -1})
		f := &streamer{end: unavailable}
		for range 5 {
			s, err := ci.Stream()(context.Background(), watchDesc, cc, "/x.Y/Watch", f.stream)
			if err != nil {
				t.Fatal(err)
			}
			if err := readAll(s); status.Code(err) != codes.Unavailable {
				t.Fatalf("got %v, want the stream's UNAVAILABLE", err)
			}
		}
		_, err := ci.Stream()(context.Background(), watchDesc, cc, "/x.Y/Watch", f.stream)
		if !errors.Is(err, client.ErrCircuitOpen) || status.Code(err) != codes.Unavailable {
			t.Errorf("6th stream: got %v, want UNAVAILABLE wrapping ErrCircuitOpen", err)
		}
		if f.opened != 5 {
			t.Errorf("opened %d streams, want 5", f.opened)
		}
	})
}

func TestClientStreamSuccessIsCountedWhenRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc := conn(t)
		ci := newInterceptor(t, client.Options{})
		f := &streamer{end: okCall}
		s, err := ci.Stream()(context.Background(), watchDesc, cc, "/x.Y/Watch", f.stream)
		if err != nil {
			t.Fatal(err)
		}
		if err := readAll(s); err != nil {
			t.Fatal(err)
		}
		if h := ci.Stats().Hosts["passthrough:///backend"]; h.Requests != 1 || h.Accepts != 1 {
			t.Errorf("got %d requests, %d accepts, want 1, 1", h.Requests, h.Accepts)
		}
	})
}

// A stream is never retried: a shed ends it with the server's status.
func TestClientStreamIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc := conn(t)
		ci := newInterceptor(t, client.Options{})
		f := &streamer{end: shedWith(codes.ResourceExhausted, "1000")}
		s, err := ci.Stream()(context.Background(), watchDesc, cc, "/x.Y/Watch", f.stream)
		if err != nil {
			t.Fatal(err)
		}
		if err := readAll(s); status.Code(err) != codes.ResourceExhausted {
			t.Errorf("got %v, want RESOURCE_EXHAUSTED", err)
		}
		if st := ci.Stats(); f.opened != 1 || st.Retries != 0 {
			t.Errorf("opened %d, retries %d, want 1, 0", f.opened, st.Retries)
		}
	})
}

func TestClientStreamOpenError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc := conn(t)
		ci := newInterceptor(t, client.Options{ThrottleK: -1})
		openErr := status.Error(codes.Unavailable, "connection refused")
		f := &streamer{openErr: openErr}
		for range 5 {
			if _, err := ci.Stream()(context.Background(), watchDesc, cc, "/x.Y/Watch", f.stream); err != openErr {
				t.Fatalf("got %v, want the streamer's error", err)
			}
		}
		if h := ci.Stats().Hosts["passthrough:///backend"]; h.Breaker != client.BreakerOpen {
			t.Errorf("got breaker %v after 5 failed opens, want open", h.Breaker)
		}
	})
}

// A SendMsg error other than io.EOF ends the stream.
func TestClientStreamSendError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc := conn(t)
		ci := newInterceptor(t, client.Options{})
		sendErr := status.Error(codes.Internal, "marshal")
		f := &streamer{end: okCall, sendErr: sendErr}
		s, err := ci.Stream()(context.Background(), watchDesc, cc, "/x.Y/Watch", f.stream)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SendMsg(nil); err != sendErr {
			t.Fatalf("got %v, want the send error", err)
		}
		if h := ci.Stats().Hosts["passthrough:///backend"]; h.Accepts != 1 {
			t.Errorf("got %d accepts, want the ended stream's 1", h.Accepts)
		}
	})
}

// A stream whose caller cancels it without reading it to the end leaves
// no goroutine behind (synctest.Test fails on one), and is no failure.
func TestClientStreamCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc := conn(t)
		ci := newInterceptor(t, client.Options{ThrottleK: -1})
		f := &streamer{end: okCall}
		for range 6 {
			ctx, cancel := context.WithCancel(context.Background())
			if _, err := ci.Stream()(ctx, watchDesc, cc, "/x.Y/Watch", f.stream); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
		synctest.Wait()
		if h := ci.Stats().Hosts["passthrough:///backend"]; h.Breaker != client.BreakerClosed {
			t.Errorf("got breaker %v after cancelled streams, want closed", h.Breaker)
		}
	})
}
