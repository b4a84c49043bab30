package compress

import (
	"strconv"
	"strings"
)

// coding is an encoding the Compressor can produce.
type coding uint8

const (
	identity coding = iota // no content coding
	codingBrotli
	codingGzip
)

func (c coding) String() string {
	switch c {
	case codingBrotli:
		return Brotli
	case codingGzip:
		return Gzip
	}
	return "identity"
}

func codingOf(name string) coding {
	switch name {
	case Brotli:
		return codingBrotli
	case Gzip:
		return codingGzip
	}
	return identity
}

// negotiate chooses the coding of a response from the request's
// Accept-Encoding (RFC 9110 12.5.3) among offered, the server's order of
// preference. The highest q-value wins; between equal q-values, the
// server's preference. A coding is acceptable when listed with q > 0, or
// when not listed and "*" is, with q > 0. An explicit "identity" with a
// q-value above the best coding's keeps the response uncompressed. With no
// header, or an empty one, the response stays uncompressed: nginx and every
// browser agree on that reading, though RFC 9110 would allow any coding.
// Malformed elements are ignored. It does not allocate.
func negotiate(ae string, offered []coding) coding {
	if ae == "" {
		return identity
	}
	var q [3]float64 // by coding: identity, br, gzip; -1 = not listed
	q[identity], q[codingBrotli], q[codingGzip] = -1, -1, -1
	star := -1.0
	for elem := range strings.SplitSeq(ae, ",") {
		name, params, _ := strings.Cut(elem, ";")
		name = strings.TrimSpace(name)
		v, ok := qvalue(params)
		if !ok || name == "" {
			continue
		}
		switch {
		case strings.EqualFold(name, Brotli):
			q[codingBrotli] = v
		case strings.EqualFold(name, Gzip), strings.EqualFold(name, "x-gzip"):
			q[codingGzip] = v
		case strings.EqualFold(name, "identity"):
			q[identity] = v
		case name == "*":
			star = v
		}
	}
	best, bestQ := identity, 0.0
	for _, c := range offered {
		v := q[c]
		if v < 0 {
			v = star
		}
		if v > bestQ {
			best, bestQ = c, v
		}
	}
	if best != identity && q[identity] > bestQ {
		return identity
	}
	return best
}

// qvalue reads the weight among an element's parameters ("q=0.5"; other
// parameters are skipped). No weight is 1. ok is false when the weight is
// not a number in [0, 1].
func qvalue(params string) (v float64, ok bool) {
	v = 1
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, val, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || !(f >= 0 && f <= 1) { // NaN too
			return 0, false
		}
		v = f
	}
	return v, true
}
