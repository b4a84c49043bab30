package compress

import "strings"

// typePattern is one entry of Options.Types, split once at New.
type typePattern struct {
	typ    string // "text"
	sub    string // "html"; "" for any subtype
	suffix string // "+json" for "*+json"; else ""
}

func compileTypes(patterns []string) []typePattern {
	out := make([]typePattern, 0, len(patterns))
	for _, p := range patterns {
		typ, sub, _ := strings.Cut(p, "/")
		tp := typePattern{typ: typ}
		switch {
		case sub == "*":
		case strings.HasPrefix(sub, "*+"):
			tp.suffix = sub[1:]
		default:
			tp.sub = sub
		}
		out = append(out, tp)
	}
	return out
}

// matchType reports whether the media type of Content-Type value ct is
// one of patterns. It does not allocate: a response header is matched on
// every response.
func matchType(patterns []typePattern, ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	typ, sub, ok := strings.Cut(strings.TrimSpace(mt), "/")
	if !ok || typ == "" || sub == "" {
		return false
	}
	for _, p := range patterns {
		if !strings.EqualFold(p.typ, typ) {
			continue
		}
		switch {
		case p.suffix != "":
			if len(sub) > len(p.suffix) && strings.EqualFold(sub[len(sub)-len(p.suffix):], p.suffix) {
				return true
			}
		case p.sub == "" || strings.EqualFold(p.sub, sub):
			return true
		}
	}
	return false
}
