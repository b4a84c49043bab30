package config

import (
	"regexp"
	"strings"
)

// Errors and warnings name the file, the line and the key, and usually
// quote the value; they go to terminals, CI logs and log pipelines. A value
// that looks like a secret is never quoted: not under a key named like one
// (token, secret, password, key, auth, cookie, ...), not in a tenant
// weight keyed by a secret-looking tenant header or cookie (an API key as
// the tenant), not anything that looks like PEM key material. The line and
// the key still say where the problem is.

// secretName reports whether a key, header or cookie name looks like it
// holds a secret.
func secretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"token", "secret", "passw", "passphrase", "credential", "private", "auth", "session", "cookie", "apikey", "api_key", "api-key", "signature"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return strings.HasSuffix(n, "key")
}

// keyMaterial reports whether s looks like PEM key or certificate text.
func keyMaterial(s string) bool {
	return strings.Contains(s, "-----BEGIN") || strings.Contains(s, "PRIVATE KEY")
}

// quoted matches a Go-quoted string (%q, strconv.Quote).
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

const redacted = "[redacted]"

// redact rewrites the problems in es that could echo a secret. c is the
// configuration as decoded (nil when there is none).
func redact(es Errors, c *Config) {
	secretTenants := false
	if c != nil {
		if kind, name, ok := strings.Cut(c.Tenants.Key, ":"); ok && (kind == "header" || kind == "cookie") {
			secretTenants = secretName(name) || kind == "cookie"
		}
	}
	for _, e := range es {
		sensitive := keyMaterial(e.Msg)
		segs := strings.FieldsFunc(e.Path, func(r rune) bool { return r == '.' || r == '[' || r == ']' })
		for _, s := range segs {
			if secretName(s) && !schemaKey(s) {
				sensitive = true
			}
		}
		if secretTenants && strings.HasPrefix(e.Path, "tenants.weights.") {
			e.Path = "tenants.weights." + redacted
			sensitive = true
		}
		if !sensitive {
			continue
		}
		e.Msg = quoted.ReplaceAllString(e.Msg, `"`+redacted+`"`)
		if keyMaterial(e.Msg) {
			e.Msg = "the value is not shown: it looks like key material"
		}
	}
}

// schemaKey reports whether name is a key of sluice's own schema whose
// values are never secrets, though named like one (tenants.key is where a
// tenant comes from, tls.keyFile a file name).
func schemaKey(name string) bool { return name == "key" || name == "keyFile" }
