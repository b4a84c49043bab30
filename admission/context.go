package admission

import "context"

// NewContext returns a copy of ctx carrying req, where FromContext finds it:
// for admission layers other than the HTTP Middleware (a gRPC interceptor,
// a queue consumer) that want the same propagation, the client package's
// Transport forwarding req's priority and deadline downstream.
func NewContext(ctx context.Context, req Request) context.Context {
	return context.WithValue(ctx, requestKey{}, req)
}
