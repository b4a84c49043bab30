package sluicegrpc_test

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/sluicehq/sluice/admission"
	sluicegrpc "github.com/sluicehq/sluice/grpc"
)

var (
	loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	t0       = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
)

// incoming returns a server-side context of a call from ip (none when
// empty) with the metadata kv.
func incoming(ip string, kv ...string) context.Context {
	ctx := context.Background()
	if ip != "" {
		ctx = peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP(ip), Port: 5000}})
	}
	return metadata.NewIncomingContext(ctx, metadata.Pairs(kv...))
}

func withDeadline(ctx context.Context, d time.Time) context.Context {
	ctx, cancel := context.WithDeadline(ctx, d)
	_ = cancel // the deadline is in the future; nothing waits on it
	return ctx
}

func TestClassify(t *testing.T) {
	rules := []sluicegrpc.Rule{
		{Method: "/shop.Cart/Checkout", Priority: admission.CriticalPlus, Cost: 3, Timeout: 2 * time.Second},
		{Method: "/shop.Reports/", Priority: admission.Sheddable, Timeout: 500 * time.Millisecond},
	}
	asks := []string{
		sluicegrpc.MetadataPriority, "critical-plus",
		sluicegrpc.MetadataTimeout, "100",
		sluicegrpc.MetadataTenant, "acme",
	}
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		method string
		want   admission.Request
	}{
		{"untrusted metadata is ignored", incoming("10.1.2.3", asks...), "/shop.Cart/View",
			admission.Request{}},
		{"trusted metadata is believed", incoming("127.0.0.1", asks...), "/shop.Cart/View",
			admission.Request{Priority: admission.CriticalPlus, Deadline: t0.Add(100 * time.Millisecond)}},
		{"IPv4-mapped peer is trusted as IPv4", incoming("::ffff:127.0.0.1", asks...), "/shop.Cart/View",
			admission.Request{Priority: admission.CriticalPlus, Deadline: t0.Add(100 * time.Millisecond)}},
		{"no peer is untrusted", incoming("", asks...), "/shop.Cart/View",
			admission.Request{}},
		{"full-method rule", incoming("10.1.2.3"), "/shop.Cart/Checkout",
			admission.Request{Priority: admission.CriticalPlus, Cost: 3, Deadline: t0.Add(2 * time.Second)}},
		{"service rule", incoming("10.1.2.3"), "/shop.Reports/Daily",
			admission.Request{Priority: admission.Sheddable, Deadline: t0.Add(500 * time.Millisecond)}},
		{"service rule does not match a longer service name", incoming("10.1.2.3"), "/shop.ReportsV2/Daily",
			admission.Request{}},
		{"trusted priority overrides the rule", incoming("127.0.0.1", sluicegrpc.MetadataPriority, "critical"), "/shop.Reports/Daily",
			admission.Request{Priority: admission.Critical, Deadline: t0.Add(500 * time.Millisecond)}},
		{"trusted timeout shortens the rule's", incoming("127.0.0.1", sluicegrpc.MetadataTimeout, "100"), "/shop.Reports/Daily",
			admission.Request{Priority: admission.Sheddable, Deadline: t0.Add(100 * time.Millisecond)}},
		{"trusted timeout cannot stretch the rule's", incoming("127.0.0.1", sluicegrpc.MetadataTimeout, "9000"), "/shop.Reports/Daily",
			admission.Request{Priority: admission.Sheddable, Deadline: t0.Add(500 * time.Millisecond)}},
		{"bad trusted values are ignored", incoming("127.0.0.1", sluicegrpc.MetadataPriority, "urgent", sluicegrpc.MetadataTimeout, "-5"), "/x.Y/Z",
			admission.Request{}},
		{"a trusted zero timeout does not lift the rule's", incoming("127.0.0.1", sluicegrpc.MetadataTimeout, "0"), "/shop.Reports/Daily",
			admission.Request{Priority: admission.Sheddable, Deadline: t0.Add(500 * time.Millisecond)}},
		{"the call's deadline, from anyone", withDeadline(incoming("10.1.2.3"), t0.Add(3*time.Second)), "/x.Y/Z",
			admission.Request{Deadline: t0.Add(3 * time.Second)}},
		{"the call's deadline when shorter than the rule's", withDeadline(incoming("10.1.2.3"), t0.Add(200*time.Millisecond)), "/shop.Reports/Daily",
			admission.Request{Priority: admission.Sheddable, Deadline: t0.Add(200 * time.Millisecond)}},
		{"the rule's timeout when shorter than the call's deadline", withDeadline(incoming("10.1.2.3"), t0.Add(time.Hour)), "/shop.Reports/Daily",
			admission.Request{Priority: admission.Sheddable, Deadline: t0.Add(500 * time.Millisecond)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &sluicegrpc.Classifier{TrustedPeers: loopback, Rules: rules, Now: func() time.Time { return t0 }}
			if got := c.Classify(tc.ctx, tc.method); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestClassifyTenant(t *testing.T) {
	long := strings.Repeat("k", 300)
	for _, tc := range []struct {
		name string
		key  string
		ctx  context.Context
		want string
	}{
		{"no tenant key", "", incoming("10.1.2.3", "x-api-key", "a"), ""},
		{"an ordinary key from anyone", "header:X-Api-Key", incoming("10.1.2.3", "x-api-key", "a"), "a"},
		{"a sluice key from an untrusted peer", "header:Sluice-Tenant", incoming("10.1.2.3", sluicegrpc.MetadataTenant, "acme"), ""},
		{"a sluice key from a trusted peer", "header:Sluice-Tenant", incoming("127.0.0.1", sluicegrpc.MetadataTenant, "acme"), "acme"},
		{"a sluice_ key from an untrusted peer", "header:Sluice_Tenant", incoming("10.1.2.3", "sluice_tenant", "acme"), ""},
		{"a sluice_ key from a trusted peer", "header:Sluice_Tenant", incoming("127.0.0.1", "sluice_tenant", "acme"), "acme"},
		{"the peer's address", "clientIP", incoming("10.1.2.3"), "10.1.2.3"},
		{"bounded in length", "header:X-Api-Key", incoming("10.1.2.3", "x-api-key", long), long[:128]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := admission.ParseTenantKey(tc.key)
			if err != nil {
				t.Fatal(err)
			}
			c := &sluicegrpc.Classifier{TrustedPeers: loopback, Tenant: k}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := c.Classify(tc.ctx, "/x.Y/Z").Tenant; got != tc.want {
				t.Errorf("got tenant %q, want %q", got, tc.want)
			}
		})
	}
}

func TestClassifierTrusted(t *testing.T) {
	c := &sluicegrpc.Classifier{TrustedPeers: loopback}
	for ip, want := range map[string]bool{"127.0.0.1": true, "::ffff:127.0.0.2": true, "10.0.0.1": false, "": false} {
		if got := c.Trusted(incoming(ip)); got != want {
			t.Errorf("Trusted(%q) = %v, want %v", ip, got, want)
		}
	}
}

func TestClassifierValidate(t *testing.T) {
	if err := new(sluicegrpc.Classifier).Validate(); err != nil {
		t.Errorf("zero Classifier: got %v, want nil", err)
	}
	cookie, _ := admission.ParseTenantKey("cookie:sid")
	c := &sluicegrpc.Classifier{
		Rules:  []sluicegrpc.Rule{{Method: "shop.Cart/Checkout"}, {Method: "/ok/", Timeout: -time.Second}},
		Tenant: cookie,
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("got nil, want errors")
	}
	for _, want := range []string{"Rules[0].Method", "Rules[1].Timeout", "Tenant.Kind"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to name %s", err, want)
		}
	}
}

// The metadata keys are admission's header names, lower case: one name
// for each thing, whether it travels over HTTP or gRPC.
func TestMetadataNamesAreHeaderNames(t *testing.T) {
	for _, tc := range []struct{ key, header string }{
		{sluicegrpc.MetadataPriority, admission.HeaderPriority},
		{sluicegrpc.MetadataTenant, admission.HeaderTenant},
		{sluicegrpc.MetadataTimeout, admission.HeaderTimeout},
		{sluicegrpc.TrailerShed, admission.HeaderShed},
	} {
		if want := strings.ToLower(tc.header); tc.key != want {
			t.Errorf("got %q, want %q (admission's %s)", tc.key, want, tc.header)
		}
	}
}
