// Command sluice is the sluice command (see github.com/sluicehq/sluice/cmd/sluice)
// with OpenTelemetry tracing of its front: build it from this module,
//
//	go build -o sluice ./cmd/sluice   # in the otel directory
//
// and it is the same binary, with the same subcommands and flags, that
// also exports spans over OTLP when the environment names a collector
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or
// OTEL_TRACES_EXPORTER=otlp for the default localhost one). With none,
// nothing is set up: no exporter, no wrapper, the front as fast as
// sluice's own binary. The spans are sluiceotel.WrapFront's; the
// exporter's and the SDK's standard variables apply (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER and _ARG,
// OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf or grpc, _HEADERS, _TIMEOUT,
// OTEL_BSP_*). The spans still buffered are sent when the command ends.
//
// It is a main of its own, in this module, so that sluice's go.mod never
// gains the OpenTelemetry SDK and exporters.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sluicehq/sluice/internal/cli"
	"github.com/sluicehq/sluice/internal/supervisor"
)

// flushTimeout bounds the export of the spans still buffered at exit.
const flushTimeout = 5 * time.Second

func main() { os.Exit(run()) }

func run() int {
	// A worker's guard is this binary re-executed: it traces nothing.
	supervisor.GuardMain()
	tr, err := newTracing(context.Background(), os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice: tracing:", err)
		return 2
	}
	code := cli.Main(tr.extensions())
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := tr.shutdown(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "sluice: tracing: sending the last spans:", err)
	}
	return code
}
