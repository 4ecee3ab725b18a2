package dataplane

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
)

// suite owns the clusters that the package's tests share, one per
// dataplane mode: a cluster takes about a minute to start, and the story,
// the Gateway and direct-target stories and the lifecycle test each need
// the same one.
var suite = harness.NewSuite("dataplane")

type sharedCluster struct {
	once sync.Once
	env  *Env
}

var (
	sharedMu sync.Mutex
	shared   = map[string]*sharedCluster{}
)

// Shared returns mode's cluster, as [Start] leaves it with kubeadm's stock
// Corefile, starting it on first use. Every test of the package that calls
// Shared with the same mode gets the same cluster, so a test leaves it as
// it found it: the chart uninstalled, the objects it created deleted. A
// test that fails has its Helm releases in the targets namespace
// uninstalled for the next one. TestMain calls [StopShared] after m.Run.
func Shared(t *testing.T, mode string) *Env {
	t.Helper()
	suite.Use(t)
	sharedMu.Lock()
	sc := shared[mode]
	if sc == nil {
		sc = &sharedCluster{}
		shared[mode] = sc
	}
	sharedMu.Unlock()
	sc.once.Do(func() { sc.env = Start(suite, mode, "kubeadm") })
	if sc.env == nil {
		harness.SkipOrFail(t, "dataplane: the shared %s cluster did not start (see the first test that used it)", mode)
	}
	e := sc.env
	t.Cleanup(func() {
		if t.Failed() {
			e.uninstallAll()
		}
	})
	return e
}

// FullModes are the dataplanes that tell every story whole (the story,
// Gateway, direct targets): one per family, the family being the agent
// that serves the Services, and of a family its last in
// cluster.Dataplanes (kube-proxy's newer mode, nftables; Cilium). The
// product logic is the same on each; what differs is the path a
// connection takes, which one mode of a family shows.
var FullModes = fullModes(cluster.Dataplanes)

func fullModes(names []string) []string {
	last := map[string]string{} // agent: its family's last dataplane
	for _, n := range names {
		dp, err := cluster.DataplaneNamed(n)
		if err != nil {
			continue
		}
		last[dp.Capabilities().Agent] = n
	}
	full := slices.Collect(maps.Values(last))
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !slices.Contains(full, n) })
}

// Smoke reports whether mode runs the story's smoke only (broken, fixed,
// uninstall): a family's other modes (kube-proxy's iptables, whose
// kube-proxy differs from the nftables mode's only in the rules it writes).
// It keeps the docs test's cluster.
func Smoke(mode string) bool { return !slices.Contains(FullModes, mode) }

// EachMode runs story once per mode, as a subtest named exactly as the
// mode, on that mode's shared cluster, and logs how long it took. A whole
// cluster is no -short test.
func EachMode(t *testing.T, modes []string, story func(t *testing.T, mode string, e *Env)) {
	t.Helper()
	if testing.Short() {
		t.Skip("end to end: a whole cluster")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			e := Shared(t, mode)
			start := time.Now()
			defer func() { t.Logf("%s: %s", t.Name(), time.Since(start).Round(time.Millisecond)) }()
			story(t, mode, e)
		})
	}
}

// uninstallAll uninstalls every Helm release in the targets namespace,
// after a test that failed half-way through its story.
func (e *Env) uninstallAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := e.Helm.Run(ctx, "list", "-n", TargetNamespace, "-q")
	if err != nil {
		suite.Logf("dataplane: helm list after a failed test: %v", err)
		return
	}
	for _, rel := range strings.Fields(out) {
		if out, err := e.Helm.Run(ctx, "uninstall", rel, "-n", TargetNamespace, "--wait", "--timeout", "2m"); err != nil {
			suite.Logf("dataplane: helm uninstall %s after a failed test: %v\n%s", rel, err, out)
		}
	}
}

// StopShared tears down every shared cluster; TestMain calls it after
// m.Run, and fails the run when it returns an error.
func StopShared() error { return suite.Close() }
