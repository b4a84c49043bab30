package sluiceotel_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/admission"
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
