package server

import (
	"context"
	"log/slog"
	"strings"
)

// logWriter turns net/http's error log into records of Logger. Handshake
// and preface failures are what port scanners and TCP health checks leave
// behind: Debug. Handler panics are Error; the rest is Warn.
type logWriter struct{ log *slog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	level := slog.LevelWarn
	switch {
	case strings.HasPrefix(msg, "http: TLS handshake error"),
		strings.HasPrefix(msg, "http2: server: error reading preface"),
		strings.HasPrefix(msg, "http: URL query contains semicolon"):
		level = slog.LevelDebug
	case strings.Contains(msg, "panic"):
		level = slog.LevelError
	}
	w.log.Log(context.Background(), level, msg, "source", "net/http")
	return len(p), nil
}
