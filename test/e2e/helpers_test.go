package e2e_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// pollInterval is the pause between two DNS polls while waiting for a change.
const pollInterval = 2 * time.Millisecond

// digA resolves name with `dig +short` at server and returns the addresses.
func digA(ctx context.Context, t *testing.T, server, name string) []netip.Addr {
	t.Helper()
	out, err := e2e.Dig(ctx, server, name, "A", "+short")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dig @%s %s A +short: %q", server, name, out)
	return e2e.ParseDigShort(out)
}

// wantAddrs fails t unless got is exactly want.
func wantAddrs(t *testing.T, what string, got []netip.Addr, want ...netip.Addr) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// waitForA polls server for name's A record every pollInterval until the
// answer is exactly want or ctx ends, and returns how long that took from
// start.
func waitForA(ctx context.Context, server, name string, want netip.Addr, start time.Time) (time.Duration, error) {
	err := harness.PollEvery(ctx, pollInterval, harness.AProbe(server, name, want))
	if err != nil {
		return time.Since(start), fmt.Errorf("after %s: %w", time.Since(start).Round(time.Millisecond), err)
	}
	return time.Since(start), nil
}

// createIngressAndWait creates an Ingress for host and waits until the
// hairpin CoreDNS's uncached block answers it with the proxy. Waiting there
// keeps the cached block's cache free of the public answer for host.
func createIngressAndWait(ctx context.Context, t *testing.T, s *e2e.Stack, ns, name, host string) {
	t.Helper()
	if _, err := e2e.CreateIngress(ctx, s.ControlPlane, ns, name, host); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := waitForA(wait, s.UncachedDNS, host, s.ProxyIP, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// curl runs curl for r and logs what happened.
func curl(ctx context.Context, t *testing.T, r e2e.CurlRequest) e2e.CurlResult {
	t.Helper()
	res, err := e2e.Curl(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("curl %s (--resolve to %s:%d): status %s, exit %d %s", r.URL(), r.IP, r.Port, res.Status, res.ExitCode, res.Stderr)
	return res
}

// within returns a context for one step that ends after d.
func within(ctx context.Context, t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(ctx, d)
	t.Cleanup(cancel)
	return ctx
}
