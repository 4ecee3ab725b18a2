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
// The polls go to the hairpin CoreDNS's server block without `cache`, so
// that the figure is the plugin's alone; the stock block with `cache 30` is
// as live (TestPropagationANameAskedBeforeItsIngressIsLiveThroughTheCache).
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

// A name that was resolved before its Ingress existed is served from the
// proxy as soon as the watch event arrives, although the stock-shaped
// block's `cache 30` holds the public answer: hairpin sits in front of cache
// (plugin.cfg), so a hairpin answer never waits for a cached one to expire.
// Behind cache this took the cache's 5 s floor (MINTTL).
func TestPropagationANameAskedBeforeItsIngressIsLiveThroughTheCache(t *testing.T) {
	ctx, s := startStack(t)
	const host = "cached.example.com"
	wantAddrs(t, "before the Ingress", digA(ctx, t, s.HairpinDNS, host), s.LoadBalancerIP)
	created := time.Now()
	if _, err := e2e.CreateIngress(ctx, s.ControlPlane, "propagation", "cached", host); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithDeadline(ctx, created.Add(liveBound))
	defer cancel()
	d, err := waitForA(wait, s.HairpinDNS, host, s.ProxyIP, created)
	if err != nil {
		t.Fatalf("the public answer cached before the Ingress existed still stands in front of the proxy's: %v", err)
	}
	t.Logf("served from the proxy %s after the create call, through cache 30", d.Round(time.Millisecond))
}
