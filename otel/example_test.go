package sluiceotel_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/reqinfo"
	sluiceotel "github.com/sluicehq/sluice/otel"
)

func ExampleWrap() {
	c, err := admission.New(admission.Options{})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	spans := tracetest.NewInMemoryExporter() // an OTLP exporter in a service
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))

	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	h := sluiceotel.Wrap(&admission.Middleware{Controller: c}, app, sluiceotel.Options{TracerProvider: tp})

	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	for _, s := range spans.GetSpans() {
		fmt.Println(s.Name)
	}
	// Output:
	// sluice.queue
	// sluice.handler
	// sluice.request
}

// WrapFront is what the traced sluice binary puts around its front
// (cli.Extensions.WrapFront); the handler inside fills in the request's
// reqinfo.Info, as sluice's proxy does, and the spans follow from it.
func ExampleWrapFront() {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	front := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := reqinfo.From(r.Context())
		info.Queued = time.Now()
		info.QueueWait = time.Millisecond
		info.Worker, info.Dispatched = 1, time.Now()
		info.WorkerTime = 20 * time.Millisecond
		fmt.Fprintln(w, "rendered")
	})
	h := sluiceotel.WrapFront(sluiceotel.Options{TracerProvider: tp})(front)

	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	for _, s := range spans.GetSpans() {
		fmt.Println(s.Name, s.EndTime.Sub(s.StartTime) > 0)
	}
	// Output:
	// sluice.queue true
	// sluice.worker true
	// sluice.request true
}
