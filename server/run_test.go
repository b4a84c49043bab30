package server_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server"
)

func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // drain at once: Run listens, serves, drains
	s := &server.Server{Addr: "127.0.0.1:0", DrainDelay: -1}
	if err := s.Run(ctx); err != nil {
		t.Errorf("Run: got %v, want nil", err)
	}
}

func TestRunErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	tests := []struct {
		name string
		s    *server.Server
		want string
	}{
		{"bad address", &server.Server{Addr: "127.0.0.1:notaport"}, "server: "},
		{"missing certificate", &server.Server{Addr: "127.0.0.1:0", CertFile: missing, KeyFile: missing}, "server: serve: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Run(context.Background())
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v, want an error starting %q", err, tc.want)
			}
		})
	}
}
