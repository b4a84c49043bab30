package proxy

import "strings"

// The path a request is classified by (admission.Classifier, on the
// decoded path, cleaned) must be the path its worker routes it by, or a
// client picks its own route: "/api/..%2fstatic/x" would be classified as
// /static/ (high priority, low cost) while Express, which routes the raw
// path segment by segment, serves it as /api/*. Workers read paths in
// different ways (raw or decoded, "%2F" a separator or not, "\" a
// separator on Windows, ";" parameters stripped by Java servers), so no
// single rewriting of a path is right for all of them. The Proxy
// therefore forwards a path only in a form that every one of them reads
// as the classifier does, and refuses (400) the others:
//
//   - a "." or ".." segment, spelled out or percent-encoded ("%2e"), alone
//     or before ";" ("..;"): browsers and HTTP libraries resolve these
//     before sending (RFC 3986 section 5.2.4), so only a crafted request
//     has one;
//   - an empty segment ("//"), but for the trailing slash;
//   - an encoded slash or backslash ("%2F", "%5C"), or a backslash.
//
// What RFC 3986 (section 6.2.2.2) holds equivalent is normalized instead:
// a percent-encoded letter, digit, "-", ".", "_" or "~" is forwarded
// decoded ("/%61pi/x" as "/api/x"), so a worker matching raw paths sees
// the route the classifier saw. Rewriting the rest, as nginx's
// merge_slashes does, would send a path the client never sent and still
// guess how each worker decodes; refusing costs only requests no browser
// makes.

// normalPath returns e, an escaped path (net/url's URL.EscapedPath), with
// its percent-encoded unreserved characters decoded, and true; false when
// e is not a path to forward (see above). It does not allocate when e has
// no such character.
func normalPath(e string) (string, bool) {
	if e == "" {
		return e, true // written as "/"
	}
	if e[0] != '/' {
		return "", false
	}
	decode := false
	for i := 0; i < len(e); i++ {
		switch e[i] {
		case '\\':
			return "", false
		case '%':
			if i+2 >= len(e) {
				return "", false
			}
			c, ok := unhex(e[i+1], e[i+2])
			switch {
			case !ok, c == '/', c == '\\':
				return "", false
			case unreserved(c):
				decode = true
			}
			i += 2
		}
	}
	if decode {
		var b strings.Builder
		b.Grow(len(e))
		for i := 0; i < len(e); i++ {
			if e[i] == '%' {
				if c, _ := unhex(e[i+1], e[i+2]); unreserved(c) {
					b.WriteByte(c)
					i += 2
					continue
				}
			}
			b.WriteByte(e[i])
		}
		e = b.String()
	}
	rest := e[1:]
	for rest != "" {
		seg, after, more := strings.Cut(rest, "/")
		if seg == "" && more {
			return "", false // "//"
		}
		if name, _, _ := strings.Cut(seg, ";"); name == "." || name == ".." {
			return "", false
		}
		rest = after
	}
	return e, true
}

// unreserved reports whether c is an RFC 3986 unreserved character.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func unhex(h, l byte) (byte, bool) {
	hi, ok1 := hexVal(h)
	lo, ok2 := hexVal(l)
	return hi<<4 | lo, ok1 && ok2
}

func hexVal(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
