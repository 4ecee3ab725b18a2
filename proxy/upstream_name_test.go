package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// TestUpstreamNameCacheFollowsTheName: the loops connect to the address the
// dialer reached; once it is older than resolveTTL one background lookup
// keeps it while the name still has it, moves to the name's new address,
// drops it when the name is gone and keeps it when the lookup merely failed.
func TestUpstreamNameCacheFollowsTheName(t *testing.T) {
	old := netip.MustParseAddrPort("127.0.0.1:80")
	notFound := &net.DNSError{Err: "no such host", Name: "up.example", IsNotFound: true}
	for _, tc := range []struct {
		name   string
		addrs  []string
		err    error
		want   netip.AddrPort
		wantOK bool
	}{
		{"name still has the address", []string{"127.0.0.2", "127.0.0.1"}, nil, old, true},
		{"name moved", []string{"127.0.0.9"}, nil, netip.MustParseAddrPort("127.0.0.9:80"), true},
		{"IPv4-mapped answer is the same address", []string{"::ffff:127.0.0.1"}, nil, old, true},
		{"name gone", nil, notFound, netip.AddrPort{}, false},
		{"lookup failed", nil, errors.New("i/o timeout"), old, true},
		{"empty answer", nil, nil, old, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lookups atomic.Int32
			u := newUpstreamName("up.example:80", time.Second, nil)
			u.lookup = func(context.Context, string, string) ([]netip.Addr, error) {
				lookups.Add(1)
				var out []netip.Addr
				for _, a := range tc.addrs {
					out = append(out, netip.MustParseAddr(a))
				}
				return out, tc.err
			}
			if _, ok := u.current(time.Now()); ok {
				t.Fatal("an address before any dial")
			}
			u.seed(net.TCPAddrFromAddrPort(old))
			if got, ok := u.current(time.Now()); !ok || got != old || lookups.Load() != 0 {
				t.Fatalf("fresh: %v %v after %d lookups, want %v and none", got, ok, lookups.Load(), old)
			}
			if got, ok := u.current(time.Now().Add(resolveTTL)); !ok || got != old {
				t.Fatalf("stale: %v %v, want the old address while the lookup runs", got, ok)
			}
			harness.Eventually(t, 5*time.Second, "the refresh", func() bool { return !u.refreshing.Load() && lookups.Load() == 1 })
			got, ok := u.current(time.Now())
			if ok != tc.wantOK || (ok && got != tc.want) {
				t.Fatalf("after refresh: %v %v, want %v %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestUpstreamNameIsOnlyForNames(t *testing.T) {
	for _, up := range []string{"127.0.0.1:80", "[::1]:80", "[fe80::1%eth0]:80", ":80", "bad"} {
		if u := newUpstreamName(up, time.Second, nil); u != nil {
			t.Errorf("%q: got a name cache", up)
		}
	}
	if u := newUpstreamName("ingress-nginx.ingress.svc.cluster.local.:443", time.Second, nil); u == nil || u.host != "ingress-nginx.ingress.svc.cluster.local." {
		t.Errorf("name: got %+v", u)
	}
}

// TestDropForgetsOnlyTheFailedAddress: a failed connect drops the address it
// used, not one a refresh has put in since.
func TestDropForgetsOnlyTheFailedAddress(t *testing.T) {
	a, b := netip.MustParseAddrPort("127.0.0.1:80"), netip.MustParseAddrPort("127.0.0.2:80")
	u := newUpstreamName("up.example:80", time.Second, nil)
	u.seed(net.TCPAddrFromAddrPort(b))
	u.drop(a)
	if got, ok := u.current(time.Now()); !ok || got != b {
		t.Fatalf("after dropping another address: %v %v, want %v", got, ok, b)
	}
	u.drop(b)
	if _, ok := u.current(time.Now()); ok {
		t.Fatal("the failed address is still used")
	}
}

// TestUpstreamByNameIsRelayedAndCached: a route whose upstream is a name
// relays, and after the first connection the loops connect themselves:
// the name is looked up at most once per resolveTTL, not per connection.
func TestUpstreamByNameIsRelayedAndCached(t *testing.T) {
	up := harness.StartUpstream(t, "127.0.0.1", harness.Echo)
	var lookups atomic.Int32
	counting := func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		lookups.Add(1)
		return net.DefaultResolver.LookupNetIP(ctx, network, host)
	}
	s := startProxy(t, testConfig(net.JoinHostPort("localhost", strconv.Itoa(up.Port())), func(c *Config) { c.ReadyInterval = time.Hour }), withLookup(counting))
	rs := s.routes[0]
	if rs.name == nil {
		t.Fatal("no name cache for a name upstream")
	}
	for i := range 30 {
		c := dialProxy(t, s, "r")
		msg := []byte("ping")
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		_ = c.CloseWrite()
		got, err := io.ReadAll(c)
		_ = c.Close()
		if err != nil || string(got) != "ping" {
			t.Fatalf("connection %d: %q, %v", i, got, err)
		}
		if i == 0 {
			if _, ok := rs.name.current(time.Now()); !ok {
				t.Fatal("the first dial did not seed the cache")
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	// 30 connections over ~1.5 s: at most two refreshes.
	if n := lookups.Load(); n > 2 {
		t.Fatalf("%d lookups for 30 connections, want at most 2", n)
	}
}
