package config_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

// Errors never quote a value that looks like a secret; they still say
// where the problem is.
func TestErrorsDoNotEchoSecrets(t *testing.T) {
	const pem = "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\\n-----END PRIVATE KEY-----"
	for _, tt := range []struct {
		name, src, secret, path string
	}{
		{"key material as the key file", "server:\n  tls: {certFile: c.pem, keyFile: \"" + pem + "\"}\n", "MIIEvQIBADAN", "server.tls.keyFile"},
		{"an Authorization header in a route", "routes:\n  - match: {header: \"Authorization Bearer sk_live_51HxQ\"}\n", "sk_live_51HxQ", "routes[0].match.header"},
		{"an API key as a weighted tenant", "tenants:\n  key: \"header:X-Api-Key\"\n  weights: {sk_live_51HxQ: -1}\n", "sk_live_51HxQ", "tenants.weights"},
		{"an API key as a weighted tenant, wrong type", "tenants:\n  key: \"header:X-Api-Key\"\n  weights: {sk_live_51HxQ: \"hunter2hunter2\"}\n", "hunter2hunter2", "tenants.weights"},
		{"a secret under an unknown key", "server:\n  password: hunter2hunter2\n", "hunter2hunter2", "server.password"},
		{"a secret env value of the wrong type", "workers:\n  command: w\n  env: {API_TOKEN: {v: hunter2hunter2}}\n", "hunter2hunter2", "workers.env.API_TOKEN"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("s.yaml", []byte(tt.src))
			if err == nil {
				t.Fatal("got no error, want one")
			}
			if strings.Contains(err.Error(), tt.secret) {
				t.Errorf("got %q, want the secret %q not shown", err, tt.secret)
			}
			if !strings.Contains(err.Error(), tt.path) {
				t.Errorf("got %q, want it to name %s", err, tt.path)
			}
		})
	}
	// An ordinary value is still quoted: redaction is not blanket.
	_, err := config.Parse("s.yaml", []byte("routes:\n  - match: {header: \"X Prefetch\"}\n"))
	if err == nil || !strings.Contains(err.Error(), `"X Prefetch"`) {
		t.Errorf("got %v, want the harmless value quoted", err)
	}
}
