package cli

import (
	"bytes"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

// serve sets GOMAXPROCS from server.procs, unless the GOMAXPROCS
// environment variable chose it already.
func TestSetProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	cfg, err := config.Parse("t", []byte("server: {procs: 1}\nworkers: {command: w}\n"))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(2)

	t.Setenv("GOMAXPROCS", "2")
	setProcs(cfg, slog.New(slog.DiscardHandler))
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("with GOMAXPROCS=2 in the environment: GOMAXPROCS %d, want it left at 2", got)
	}

	t.Setenv("GOMAXPROCS", "")
	var log bytes.Buffer
	setProcs(cfg, slog.New(slog.NewTextHandler(&log, nil)))
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("server.procs 1: GOMAXPROCS %d, want 1", got)
	}
	if !strings.Contains(log.String(), "msg=procs gomaxprocs=1 cpus=2") {
		t.Errorf("log %q, want the change recorded", log.String())
	}
}
