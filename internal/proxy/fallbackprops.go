package proxy

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"
)

// A fallback that renders on the client needs what the server would have
// rendered from: the page's props. They arrive with the request (as
// Hypernova's callers sent them), so the fallback's body may carry them:
// each PropsPlaceholder is replaced by the value Fallback.Props names,
// written as a JavaScript string literal in which every character that
// could end a <script> element, open a comment, or end the literal is
// \u-escaped (< > & / ' " \, the controls, U+2028 and U+2029). The shell
// reads it with JSON.parse, so the value is data, never markup or code,
// whatever the client sent. The literal is meant for a <script> element:
// its quotes make it unfit for an HTML attribute.

// PropsPlaceholder is replaced in a Fallback's Body by the request's props.
const PropsPlaceholder = "{{sluice.props}}"

var placeholder = []byte(PropsPlaceholder)

// ValidateProps checks a Fallback.Props: "", "query:NAME" or "header:NAME".
func ValidateProps(props string) error {
	if props == "" {
		return nil
	}
	kind, name, ok := strings.Cut(props, ":")
	if !ok || (kind != "query" && kind != "header") || name == "" {
		return errors.New(`want "query:NAME" or "header:NAME"`)
	}
	return nil
}

// body returns f's body for r, with r's props in place of each
// placeholder when f takes props.
func (f *Fallback) body(r *http.Request) []byte {
	if f.Props == "" || !bytes.Contains(f.Body, placeholder) {
		return f.Body
	}
	kind, name, _ := strings.Cut(f.Props, ":")
	var v string
	var ok bool
	if kind == "header" {
		var vv []string
		vv, ok = r.Header[http.CanonicalHeaderKey(name)]
		if ok {
			v = vv[0]
		}
	} else {
		q := r.URL.Query()
		ok = q.Has(name)
		v = q.Get(name)
	}
	lit := []byte("null")
	if ok {
		lit = scriptString(v)
	}
	return bytes.ReplaceAll(f.Body, placeholder, lit)
}

// scriptString returns s as a double-quoted JavaScript string literal
// safe inside a <script> element (see above). Invalid UTF-8 becomes
// U+FFFD.
func scriptString(s string) []byte {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for _, c := range s {
		switch {
		case c == utf8.RuneError, c < 0x20, c == 0x7f, c == 0x2028, c == 0x2029,
			strings.ContainsRune(`<>&/'"\`, c):
			if c == utf8.RuneError {
				c = 0xfffd
			}
			b = append(b, '\\', 'u', hex[c>>12&0xf], hex[c>>8&0xf], hex[c>>4&0xf], hex[c&0xf])
		default:
			b = utf8.AppendRune(b, c)
		}
	}
	return append(b, '"')
}
