package config

import (
	"fmt"
	"math"
	"math/big"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// ParseDuration parses a duration as the file writes it: a Go duration
// string ("65s", "1m5s", "-1s") or a bare number of milliseconds ("65000",
// "2.5").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return millis(f)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("config: %q is not a duration (want a Go duration such as \"65s\" or \"1m5s\", or a number of milliseconds)", s)
	}
	return d, nil
}

// millis converts a number of milliseconds to a Duration, rounding to the
// nanosecond.
func millis(ms float64) (time.Duration, error) {
	if math.IsNaN(ms) || math.Abs(ms) > float64(math.MaxInt64)/float64(time.Millisecond) {
		return 0, fmt.Errorf("config: %v milliseconds is out of range", ms)
	}
	return time.Duration(math.Round(ms * float64(time.Millisecond))), nil
}

var sizeUnits = map[string]int64{
	"":    1,
	"b":   1,
	"kb":  1000,
	"mb":  1000 * 1000,
	"gb":  1000 * 1000 * 1000,
	"tb":  1000 * 1000 * 1000 * 1000,
	"kib": 1 << 10,
	"mib": 1 << 20,
	"gib": 1 << 30,
	"tib": 1 << 40,
}

// ParseSize parses a size in bytes as the file writes it: a whole number
// ("65536") or a number and a unit ("64KiB", "1.5 MB"). KB, MB, GB and TB
// are powers of 1000; KiB, MiB, GiB and TiB powers of 1024; units ignore
// case. The result must be a whole number of bytes.
func ParseSize(s string) (int64, error) {
	bad := func() (int64, error) {
		return 0, fmt.Errorf("config: %q is not a size (want bytes, or a number and one of B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s)
	}
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != '-' && r != '+' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if !ok || num == "" || strings.ContainsAny(num[1:], "+-") {
		return bad()
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok || strings.ContainsAny(num, "/eE") {
		return bad()
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, fmt.Errorf("config: %q is not a whole number of bytes", s)
	}
	n := r.Num()
	if !n.IsInt64() {
		return 0, fmt.Errorf("config: %q is out of range", s)
	}
	return n.Int64(), nil
}

// parsePeer parses a trusted peer: a CIDR, or a bare IP meaning that one
// address. Host bits of a CIDR are cleared.
func parsePeer(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("config: %q is not a CIDR or IP address", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("config: %q is not a CIDR or IP address", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// portHint returns the hint for a port given alone where the listen
// address at path wants host:port: every interface for the server, the
// loopback for the admin listener, which should stay off the network.
func portHint(path, port string) string {
	if path == "admin.listen" {
		return fmt.Sprintf(" (write %q: port %s on the loopback)", "127.0.0.1:"+port, port)
	}
	return fmt.Sprintf(" (write %q: port %s on every interface)", ":"+port, port)
}

// checkHostPort checks a listen or dial address, host:port, at path. The
// host may be empty (every interface) only when listening; the port is a
// number, and 0 (any free port) only when listening.
func checkHostPort(path, addr string, listening bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		hint := ""
		if _, perr := strconv.ParseUint(addr, 10, 16); perr == nil && listening {
			// A port alone, as a flag takes it (a file's number is caught
			// by its type, with the same hint).
			hint = portHint(path, addr)
		}
		return fmt.Errorf("%q is not host:port%s", addr, hint)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	if p == 0 && !listening {
		return fmt.Errorf("%q: port 0 cannot be dialled", addr)
	}
	if host == "" {
		if !listening {
			return fmt.Errorf("%q has no host", addr)
		}
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if !validHostname(host) {
		return fmt.Errorf("%q: %q is not an IP address or host name", addr, host)
	}
	return nil
}

func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2): a
// method or header name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// suggest returns the candidate the unknown key most likely meant, or "".
// Case, dashes and underscores are ignored first ("keep_alive_timeout"),
// then a small edit distance is allowed ("keepAliveTimout").
func suggest(key string, candidates []string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(s))
	}
	nk := norm(key)
	best, bestDist := "", max(1, len(nk)/3)+1
	for _, c := range candidates {
		nc := norm(c)
		if nc == nk {
			return c
		}
		if len(nk) >= 4 && strings.HasPrefix(nc, nk) && bestDist > 1 {
			best, bestDist = c, 1 // "path" for "pathPrefix"
			continue
		}
		if d := editDistance(nk, nc); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
// Keys are short; inputs longer than 64 bytes are never close to one.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
