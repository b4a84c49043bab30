package sluicegrpc

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// unaryCall is a unary call as the bridge attempts it. Its err is the last
// attempt's; the Transport runs attempts one after another on the caller's
// goroutine.
type unaryCall struct {
	method     string
	req, reply any
	cc         *grpc.ClientConn
	invoker    grpc.UnaryInvoker
	opts       []grpc.CallOption
	err        error
}

func (c *unaryCall) attempt(ctx context.Context) (metadata.MD, error) {
	var trailer metadata.MD
	opts := append(c.opts[:len(c.opts):len(c.opts)], grpc.Trailer(&trailer))
	c.err = c.invoker(ctx, c.method, c.req, c.reply, c.cc, opts...)
	return trailer, c.err
}

// Stream returns the interceptor for streams. A stream is let through or
// refused by its target's breaker and throttle when it is opened, and its
// end (RecvMsg's error or io.EOF, or its context done) is judged as a unary
// call's result. It is never retried. The Transport's attempt runs on a
// goroutine of its own that lives as long as the stream: grpc-go's rule that
// a stream's context must be cancelled or its RecvMsg read to an error
// bounds it too.
func (ci *ClientInterceptor) Stream() grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		call := &streamCall{
			desc: desc, cc: cc, method: method, streamer: streamer, opts: opts,
			opened:   make(chan struct{}),
			end:      make(chan streamEnd, 1),
			returned: make(chan struct{}),
		}
		go func() {
			resp, err := ci.t.RoundTrip(request(ctx, cc.Target(), method, call, false))
			if resp != nil {
				_ = resp.Body.Close()
			}
			call.rtErr = err
			close(call.returned)
		}()
		select {
		case <-call.opened:
		case <-call.returned:
			select {
			case <-call.opened: // opened too: the stream's own error decides
			default: // refused before it was opened
				return nil, callError(ctx, call.rtErr)
			}
		}
		if call.openErr != nil {
			<-call.returned
			return nil, call.openErr
		}
		return &clientStream{ClientStream: call.cs, call: call}, nil
	}
}

// streamCall is a stream as the bridge attempts it: the attempt opens it,
// hands it over (opened), and waits for its end.
type streamCall struct {
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	method   string
	streamer grpc.Streamer
	opts     []grpc.CallOption

	opened  chan struct{} // closed when the streamer has returned
	cs      grpc.ClientStream
	openErr error

	end      chan streamEnd // the stream's end, sent once
	returned chan struct{}  // closed when the Transport has returned
	rtErr    error
}

type streamEnd struct {
	trailer metadata.MD
	err     error
}

func (c *streamCall) attempt(ctx context.Context) (metadata.MD, error) {
	c.cs, c.openErr = c.streamer(ctx, c.desc, c.cc, c.method, c.opts...)
	close(c.opened)
	if c.openErr != nil {
		return nil, c.openErr
	}
	select {
	case e := <-c.end:
		return e.trailer, e.err
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// clientStream reports the stream's end to its attempt, and waits until the
// Transport has counted it, so that Stats agree once RecvMsg has returned.
type clientStream struct {
	grpc.ClientStream
	call *streamCall
	once sync.Once
}

func (s *clientStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		// The trailer may be read once RecvMsg has returned an error.
		s.finish(s.ClientStream.Trailer(), err)
	}
	return err
}

// SendMsg ends the stream on an error other than io.EOF, which means the
// server ended it and RecvMsg has its status.
func (s *clientStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	if err != nil && !errors.Is(err, io.EOF) {
		s.finish(nil, err)
	}
	return err
}

func (s *clientStream) finish(trailer metadata.MD, err error) {
	s.once.Do(func() {
		if errors.Is(err, io.EOF) {
			err = nil
		}
		s.call.end <- streamEnd{trailer: trailer, err: err}
		<-s.call.returned
	})
}
