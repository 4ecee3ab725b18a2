package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// One control plane serves every test of the package: it is the slow part
// (several seconds to start, with the Gateway API CRDs), and the tests use
// distinct host names, so they do not see each other's objects. Each test
// starts its own children (nginx, DNS servers, proxy), which takes well under
// a second.
var shared struct {
	once sync.Once
	cp   *harness.ControlPlane
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.cp != nil {
		if err := shared.cp.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: stop control plane: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// controlPlane returns the package's control plane, starting it on first use.
// Without KUBEBUILDER_ASSETS the test is skipped (failed under
// HAIRPIN_REQUIRE_E2E=1).
func controlPlane(t *testing.T) *harness.ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("end to end: starts kube-apiserver, etcd, nginx, CoreDNS and the proxy")
	}
	dir := harness.RequireAssets(t)
	shared.once.Do(func() {
		start := time.Now()
		shared.cp, shared.err = harness.StartControlPlane(harness.ControlPlaneOptions{AssetsDir: dir, GatewayAPI: harness.GatewayStandard})
		if shared.err == nil {
			t.Logf("control plane up in %s", time.Since(start).Round(time.Millisecond))
		}
	})
	if shared.err != nil {
		t.Fatalf("control plane: %v", shared.err)
	}
	cp := shared.cp
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range []string{"kube-apiserver.log", "etcd.log"} {
				t.Logf("tail of %s:\n%s", name, tail(filepath.Join(cp.Dir, name), 8<<10))
			}
		}
	})
	return cp
}

// startStack starts the whole stack for t.
func startStack(t *testing.T) (context.Context, *e2e.Stack) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	t.Cleanup(cancel)
	s := e2e.StartStack(ctx, t, controlPlane(t))
	t.Logf("stack: LoadBalancer IP %s (nginx :%d/:%d), proxy ClusterIP %s, public DNS %s, stock CoreDNS %s, hairpin CoreDNS %s",
		s.LoadBalancerIP, s.HTTPPort, s.HTTPSPort, s.ProxyIP, s.PublicDNS, s.StockDNS, s.HairpinDNS)
	return ctx, s
}

func tail(path string, n int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}
