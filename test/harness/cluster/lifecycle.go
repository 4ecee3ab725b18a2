package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// New starts a cluster and returns it once its node is Ready, as envtest's
// Start does a control plane; [Cluster.Close] tears it down. What New
// started before it failed is torn down before it returns. The error wraps
// [harness.ErrSkipped] when this machine lacks what the cluster needs
// (root, iproute2, haproxy, the binaries of build/tools.sh; for Cilium
// also BPF, clang >= 18.1, bpftool and helm), unless
// HAIRPIN_REQUIRE_E2E=1 makes that a failure.
func New(ctx context.Context, opts Options) (*Cluster, error) {
	c := &Cluster{opts: opts, life: harness.NewSuite("cluster")}
	if opts.Output != nil {
		c.life.SetOutput(opts.Output)
	}
	begin := time.Now()
	if err := c.life.Run(func() error { return c.up(ctx) }); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	c.life.Logf("up in %s (%s: %s)", time.Since(begin).Round(time.Millisecond), c.opts.Dataplane.Name(), c.Capabilities().Agent)
	return c, nil
}

// up checks what the cluster needs, fills in the options' defaults, and
// starts it. It runs inside the cluster's [harness.Suite.Run]: a harness
// helper's skip or Fatal ends it.
func (c *Cluster) up(ctx context.Context) error {
	t := c.life
	if os.Geteuid() != 0 {
		harness.SkipOrFail(t, "cluster: the real dataplane needs root (network namespaces)")
	}
	if c.opts.Dataplane == nil {
		return fmt.Errorf("cluster: Options.Dataplane is required (cluster.DataplaneNamed)")
	}
	if c.opts.AssetsDir == "" {
		c.opts.AssetsDir = harness.RequireAssets(t)
	}
	for _, b := range []string{"kube-controller-manager", "kube-scheduler"} {
		harness.RequireExecutable(t, filepath.Join(c.opts.AssetsDir, b))
	}
	if c.opts.ClusterDomain == "" {
		c.opts.ClusterDomain = ClusterDomain
	}
	if c.opts.Name == "" {
		c.opts.Name = c.opts.Dataplane.Name()
	}
	c.dir = t.TempDir()
	if err := c.opts.Dataplane.prepare(t, c); err != nil {
		harness.SkipOrFail(t, "cluster: the %s dataplane cannot run here: %v", c.opts.Dataplane.Name(), err)
	}
	if err := c.start(ctx); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

// Close tears the cluster down in one ordered stack, the last started
// first, each step even after another failed, and returns the steps'
// errors, each under its step's name, with every failure reported meanwhile
// outside a test. A second Close has nothing left to do.
func (c *Cluster) Close() error { return c.life.Close() }

// Start is [New] for t: it logs to t, skips t (or fails it under
// HAIRPIN_REQUIRE_E2E=1) where the cluster cannot run, fails t where it
// does not start, and closes the cluster in t.Cleanup, after a failure
// too. While t runs, the cluster reports to t what goes wrong.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Output == nil {
		opts.Output = t.Output()
	}
	c, err := New(t.Context(), opts)
	if errors.Is(err, harness.ErrSkipped) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	c.life.Use(t)
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return c
}
