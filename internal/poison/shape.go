package poison

import (
	"path"
	"strings"
)

// maxSegment is the longest path segment kept as it is in a shape; a
// longer one is taken for an identifier (a token, a hash, a slug).
const maxSegment = 24

// maxDepth is how many leading segments a shape keeps; the rest is one *.
const maxDepth = 3

// maxMethod is the longest method kept as it is; a longer one is "OTHER",
// so that a shape's length is bounded whatever a client sends.
const maxMethod = 16

// shapes is a request's one or two shapes (see the package doc).
type shapes struct {
	fine, coarse string // coarse is "" when the path has one segment
}

// shapesOf returns the shapes of a request with method and URL path p.
func shapesOf(method, p string) shapes {
	if len(method) > maxMethod {
		method = "OTHER"
	}
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	p = strings.ToLower(path.Clean(p))
	if p == "/" {
		return shapes{fine: method + " /"}
	}
	var b strings.Builder
	b.Grow(len(method) + 1 + min(len(p), maxDepth*(maxSegment+1)+2))
	b.WriteString(method)
	b.WriteByte(' ')
	rest, depth := p[1:], 0
	var first string
	for rest != "" {
		seg, tail, _ := strings.Cut(rest, "/")
		if depth == maxDepth {
			b.WriteString("/*")
			break
		}
		if isIdentifier(seg) {
			seg = "*"
		}
		if depth == 0 {
			first = seg
		}
		b.WriteByte('/')
		b.WriteString(seg)
		rest, depth = tail, depth+1
	}
	s := shapes{fine: b.String()}
	if depth > 1 {
		if coarse := method + " /" + first + "/*"; coarse != s.fine {
			s.coarse = coarse
		}
	}
	return s
}

// isIdentifier reports whether a path segment names one thing among many
// (an ID, a hash, a token) rather than a route: it holds a digit or is
// longer than maxSegment.
func isIdentifier(seg string) bool {
	if len(seg) > maxSegment {
		return true
	}
	for i := 0; i < len(seg); i++ {
		if c := seg[i]; c >= '0' && c <= '9' {
			return true
		}
	}
	return false
}
