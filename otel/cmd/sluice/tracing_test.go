package main

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// Tracing is on only where the environment names a collector, and off
// again with the specification's switches.
func TestTracingEnabled(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		on   bool
		err  bool
	}{
		{"nothing set: off", nil, false, false},
		{"an endpoint: on", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, false},
		{"a traces endpoint: on", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, false},
		{"exporter otlp, default endpoint: on", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, false},
		{"exporter none: off", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, false, false},
		{"SDK disabled: off", map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, false, false},
		{"exporter unknown: error", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			on, err := enabled(func(k string) string { return tt.env[k] })
			if on != tt.on || (err != nil) != tt.err {
				t.Errorf("got %v, %v; want %v, error %v", on, err, tt.on, tt.err)
			}
		})
	}
}

// Off, the command gets no extension: its front is sluice's own.
func TestTracingOffNoWrapper(t *testing.T) {
	tr, err := newTracing(context.Background(), func(string) string { return "" })
	if err != nil || tr.tp != nil || tr.extensions().WrapFront != nil || tr.shutdown(context.Background()) != nil {
		t.Errorf("got provider %v, wrapper set %v, err %v; want none", tr.tp, tr.extensions().WrapFront != nil, err)
	}
}

// The protocol is the environment's: http/protobuf by default, or grpc.
func TestTracingProtocol(t *testing.T) {
	tests := []struct {
		env map[string]string
		err bool
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.env), func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v) // the exporters read the environment themselves
			}
			tr, err := newTracing(context.Background(), os.Getenv)
			if (err != nil) != tt.err || (err == nil) != (tr.tp != nil) {
				t.Errorf("got provider %v, err %v; want error %v", tr.tp != nil, err, tt.err)
			}
			if err := tr.shutdown(context.Background()); err != nil {
				t.Errorf("shutdown with nothing to send: %v", err)
			}
		})
	}
}
