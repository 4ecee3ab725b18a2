package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/e2e"
)

// propagationBound is the longest a new Ingress may take to be served.
const propagationBound = 5 * time.Second

// A new Ingress is served within milliseconds: no Corefile patching, no
// reload. The delay is measured from the moment the apiserver's create call
// returns to the first DNS answer with the proxy's ClusterIP.
//
// The polls go to the hairpin CoreDNS's server block without `cache`. Each
// name is new, but in the stock block the first poll (sent right after the
// create returns) usually arrives before the watch event: it is answered by
// the public DNS, and `cache` then keeps that answer for at least its 5 s
// floor (MINTTL; the public TTL and SOA minimum are lower), however fast the
// plugin is. TestPropagationThroughTheCacheWaitsForTheCachedAnswer shows
// that case.
func TestPropagationNewIngressIsServedWithinMilliseconds(t *testing.T) {
	ctx, s := startStack(t)
	const rounds = 10
	var delays []time.Duration
	for i := range rounds {
		host := fmt.Sprintf("new-%d.example.com", i)
		if _, err := e2e.CreateIngress(ctx, s.ControlPlane, "propagation", fmt.Sprintf("new-%d", i), host); err != nil {
			t.Fatal(err)
		}
		created := time.Now()
		wait, cancel := context.WithTimeout(ctx, propagationBound)
		d, err := waitForA(wait, s.UncachedDNS, host, s.ProxyIP, created)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("propagation: %s", d)
		delays = append(delays, d)

		// The cached stock-shaped block has never seen the name, so its first
		// answer is the plugin's too.
		wantAddrs(t, "hairpin CoreDNS (cached block), first query", digA(ctx, t, s.HairpinDNS, host), s.ProxyIP)
	}
	slices.Sort(delays)
	t.Logf("propagation over %d Ingresses: min %s, median %s, max %s", rounds, delays[0], delays[rounds/2], delays[rounds-1])
}

// A name that was resolved before its Ingress existed keeps the cached
// public answer until that cache entry expires: cache sits in front of
// hairpin (plugin.cfg), and CoreDNS's cache holds every answer for at least
// 5 s. The switch to the proxy therefore takes up to that long, which is the
// price of the stock `cache 30` and not of the plugin.
func TestPropagationThroughTheCacheWaitsForTheCachedAnswer(t *testing.T) {
	ctx, s := startStack(t)
	const host = "cached.example.com"
	wantAddrs(t, "before the Ingress", digA(ctx, t, s.HairpinDNS, host), s.LoadBalancerIP)
	queried := time.Now()
	if _, err := e2e.CreateIngress(ctx, s.ControlPlane, "propagation", "cached", host); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, cacheFloor+time.Second)
	defer cancel()
	d, err := waitForA(wait, s.HairpinDNS, host, s.ProxyIP, queried)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cached public answer held for %s after the first query", d)
	if d < cacheFloor-500*time.Millisecond {
		t.Errorf("the cached public answer was replaced after %s, before the cache's %s floor: is cache still in front of hairpin?", d, cacheFloor)
	}
}

// cacheFloor is CoreDNS's cache MINTTL default (dnsutil.MinimalDefaultTTL).
const cacheFloor = 5 * time.Second
