package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sluicehq/sluice/internal/cli"
	sluiceotel "github.com/sluicehq/sluice/otel"
)

// tracing is the command's tracer provider; its zero value is tracing
// off.
type tracing struct {
	tp *sdktrace.TracerProvider // nil: off
}

// newTracing sets up the export of spans the environment asks for, or
// nothing: tracing is on when a collector is named (an OTLP endpoint, or
// OTEL_TRACES_EXPORTER=otlp), and off with OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none.
func newTracing(ctx context.Context, getenv func(string) string) (tracing, error) {
	on, err := enabled(getenv)
	if err != nil || !on {
		return tracing{}, err
	}
	exp, err := newExporter(ctx, getenv)
	if err != nil {
		return tracing{}, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(serviceAttributes()...), // the environment's override these
		resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost())
	if err != nil {
		// A partial resource is still worth exporting under.
		fmt.Fprintln(os.Stderr, "sluice: tracing: resource:", err)
	}
	// The sampler is the environment's (OTEL_TRACES_SAMPLER), by default
	// the parent's decision, else every trace.
	return tracing{tp: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

func enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: want otlp or none", e)
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
}

// newExporter is the OTLP exporter of the protocol the environment names,
// configured by the exporter itself from the rest of it (endpoint,
// headers, TLS, compression, timeout).
func newExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch proto {
	case "", "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	}
	return nil, fmt.Errorf("OTLP protocol %q: want http/protobuf or grpc", proto)
}

// serviceAttributes name the service sluice, of the module's version when
// the build knows it.
func serviceAttributes() []attribute.KeyValue {
	kv := []attribute.KeyValue{attribute.String("service.name", "sluice")}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		kv = append(kv, attribute.String("service.version", bi.Main.Version))
	}
	return kv
}

// extensions are the command's: with tracing on, the front traced.
func (t tracing) extensions() cli.Extensions {
	if t.tp == nil {
		return cli.Extensions{}
	}
	return cli.Extensions{WrapFront: sluiceotel.WrapFront(sluiceotel.Options{TracerProvider: t.tp})}
}

// shutdown sends the spans still buffered and stops the exporter.
func (t tracing) shutdown(ctx context.Context) error {
	if t.tp == nil {
		return nil
	}
	return errors.Join(t.tp.ForceFlush(ctx), t.tp.Shutdown(ctx))
}
