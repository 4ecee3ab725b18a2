package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/e2e"
)

// liveBound is how soon a change must be answered through a stock
// Corefile's `cache 30`. hairpin sits in front of cache (plugin.cfg), so no
// cached answer stands between a watch event and the client: the bound is
// one of correctness, not of speed. Behind cache it was the cache's 5 s
// floor at best.
const liveBound = time.Second

// TestChangesAreLiveThroughTheStockCache: on the stock kubeadm and Talos
// Corefiles (`cache 30`), a name that was asked before its target existed
// gets the target's answer within liveBound of the target's creation, and
// the public answer again within liveBound of its deletion. This is
// cert-manager's self-check: it asks, fails, and asks again.
func TestChangesAreLiveThroughTheStockCache(t *testing.T) {
	ctx, env := newDistributionEnv(t, 3*time.Minute)
	cp, lb := env.cp, env.lb

	for _, name := range []string{"kubeadm", "talos"} {
		t.Run(name, func(t *testing.T) {
			d := startDistributionDNS(ctx, t, env.coredns, name, env.upstream, cp)
			if !cachesTheZone(d.corefile) {
				t.Fatalf("the %s Corefile has no `cache 30`: the test would prove nothing:\n%s", name, d.corefile)
			}
			host := name + "-live." + e2e.Zone
			createIngress(ctx, t, cp, "live-"+name, host)
			// Asked before any target: the public answer, which cache now
			// holds for the public TTL (and at least its 5 s floor).
			answers(ctx, t, d.listen, host, lb, "0. no target yet: the public answer")

			created := time.Now()
			ip, deleteTarget := createTarget(ctx, t, cp, "live-"+name)
			within := withDeadline(ctx, t, created, liveBound)
			took, err := waitForA(within, d.listen, host, ip, created)
			if err != nil {
				t.Fatalf("1. target created: not answered with its ClusterIP %s within %s of the create call (a cached public answer in front?): %v", ip, liveBound, err)
			}
			t.Logf("1. target created: answered with %s after %s", ip, took.Round(time.Millisecond))

			gone := time.Now()
			deleteTarget()
			within = withDeadline(ctx, t, gone, liveBound)
			took, err = waitForA(within, d.listen, host, lb, gone)
			if err != nil {
				t.Fatalf("2. target deleted: the public answer %s did not return within %s of the delete call (a cached hairpin answer in front?): %v", lb, liveBound, err)
			}
			t.Logf("2. target deleted: the public answer after %s", took.Round(time.Millisecond))
		})
	}
}

// withDeadline is ctx ending d after start, which may be in the past.
func withDeadline(ctx context.Context, t *testing.T, start time.Time, d time.Duration) context.Context {
	ctx, cancel := context.WithDeadline(ctx, start.Add(d))
	t.Cleanup(cancel)
	return ctx
}

// cachesTheZone reports whether a local Corefile caches e2e.Zone for 30 s,
// as the kubeadm and Talos fixtures do.
func cachesTheZone(corefile string) bool {
	return strings.Contains(corefile, "\n    cache 30 {\n")
}
