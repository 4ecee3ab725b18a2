package dataplane_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	corev1 "k8s.io/api/core/v1"

	"github.com/coredns-hairpin/hairpin/test/dataplane"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
	"github.com/coredns-hairpin/hairpin/test/harness/steady"
)

// TestMigrateFromOuroboros runs docs/migrate.md's migration off
// ouroboros, and the way back, on a cluster of the shape the page
// describes, with ouroboros v0.8.1 as it leaves a working cluster (its
// stand-ins: dataplane.Ouroboros, dataplane.OuroborosController,
// dataplane.CozyOperator). Each step runs the page's blocks marked
// `<!-- docs-test: on SHAPE STEP -->`, as the docs test runs a block
// (what the page says a command prints included), and the page's steps
// must be the test's, in its order; the test then checks the step's
// outcome itself. A steady client asks for and requests the host the
// whole time; each step prints `lifecycle: STEP
// requests=N failed=M ...` and fails the test on any failure, DNS or
// HTTP. The check's hosts-shadowed finding is there once hairpin is
// installed behind ouroboros's rewrite and gone at the end.
//
// Only the host of ouroboros's proxy.target is counted: ouroboros sends
// every host to its one proxy, in front of that controller, so on the
// management cluster a tenant's host never worked through it. The shapes:
// the management cluster (coredns mode, Talos's Corefile, the Packages)
// and, with the cozy-tenant shape, a tenant (coredns-import mode into
// coredns-custom, which the tenant's Corefile imports; the kubernetes
// app's addon).
func TestMigrateFromOuroboros(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: a whole cluster")
	}
	if !slices.Contains(cluster.Dataplanes, cozyDataplane) {
		t.Skipf("the %s dataplane is left out: %s", cozyDataplane, cluster.EnvDataplanes)
	}
	t.Run("cozystack-management", func(t *testing.T) {
		root := cozyControllers[0]
		migrate(t, migrationShape{
			name: "cozystack-management", ic: root, tenant: false,
			start: func(t *testing.T) *dataplane.Env {
				return startCozystack(t, "migrate-cozy", cozyControllers[:1], dataplane.CozystackCRDs(t))
			},
			o: &dataplane.Ouroboros{Namespace: "cozy-ouroboros", Release: "ouroboros", Mode: dataplane.OuroborosCoreDNS,
				ClusterDomain: cozyDomain, Upstream: root.Namespace + "/" + root.Service()},
			// The platform with the PROXY protocol on emits ouroboros's
			// Package.
			seed: func(ctx context.Context, _ *dataplane.Env, dc dynamic.Interface) error {
				_, err := dc.Resource(dataplane.PackageResource).Create(ctx, dataplane.PlatformPackageObject(), metav1.CreateOptions{})
				return err
			},
			removed: func(ctx context.Context, dc dynamic.Interface) error {
				if _, err := dc.Resource(dataplane.PackageResource).Get(ctx, dataplane.OuroborosPackage, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("%s is back after its removal (%v): the platform still emits it", dataplane.OuroborosPackage, err)
				}
				return nil
			},
		})
	})
	dp, err := cluster.DataplaneNamed(cluster.CozyTenant)
	if err != nil {
		t.Fatal(err)
	}
	if !cluster.Covers(dp) {
		return
	}
	t.Run(dp.Name(), func(t *testing.T) {
		ic := dataplane.CozyTenantIngress
		migrate(t, migrationShape{
			name: "cozystack-tenant", ic: ic, tenant: true,
			start: func(t *testing.T) *dataplane.Env {
				return dataplane.StartWith(t, dataplane.Config{
					Mode: cluster.CozyTenant, Name: "migrate-tenant", Distribution: dataplane.CozyTenantDistribution,
					Controllers: tenantControllers, HostSearch: []string{dataplane.CozyPlatformDomain},
					CRDDirs: []string{dataplane.CozystackCRDs(t)},
				})
			},
			// The tenant's domain, which Cozystack pins for the addon
			// (controller.clusterDomain), and the wrapper chart's
			// proxy.target (cozy-ingress-nginx, ingress-nginx-controller).
			o: &dataplane.Ouroboros{Namespace: "cozy-ouroboros", Release: "ouroboros", Mode: dataplane.OuroborosImport,
				ClusterDomain: "cluster.local", Upstream: ic.Namespace + "/" + ic.Service()},
			// The tenant's app, in its namespace on the management
			// cluster (the test cluster itself), with its ouroboros addon
			// on.
			seed: func(ctx context.Context, e *dataplane.Env, dc dynamic.Interface) error {
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dataplane.TenantAppNamespace}}
				if _, err := e.CP.Clientset.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
					return err
				}
				_, err := dc.Resource(dataplane.KubernetesAppResource).Namespace(dataplane.TenantAppNamespace).Create(ctx, dataplane.TenantAppObject(), metav1.CreateOptions{})
				return err
			},
		})
	})
}

// migrationShape is a cluster of a shape the page describes, with
// ouroboros in the mode it runs there.
type migrationShape struct {
	// name is the shape's, as the page's markers name it.
	name string
	// ic is the controller whose host the steady client counts: the one
	// behind ouroboros's proxy.
	ic     cluster.IngressController
	o      *dataplane.Ouroboros
	tenant bool
	start  func(t *testing.T) *dataplane.Env
	// seed writes what has Cozystack install ouroboros; removed, if not
	// nil, checks what its removal leaves.
	seed    func(ctx context.Context, e *dataplane.Env, dc dynamic.Interface) error
	removed func(ctx context.Context, dc dynamic.Interface) error
}

// migratePage is the page whose blocks the test runs.
const migratePage = "docs/migrate.md"

// migrationSteps are the steps of the migration and of the way back, on
// each shape, in the order the page must have them.
var migrationSteps = []string{"install-hairpin", "stop-controller", "take-lines-out", "wait-reloaded", "remove-ouroboros",
	"back-to-ouroboros", "uninstall-hairpin"}

// migration is one run of the migration on a cluster, its steps counted
// as the lifecycle test counts its operations.
type migration struct {
	*lifecycleRun
	o    *dataplane.Ouroboros
	ctl  *dataplane.OuroborosController
	host string
	dc   dynamic.Interface
	// proxy is ouroboros's proxy Service's ClusterIP, target ours.
	proxy, target string
	// docs runs the page's blocks of each step.
	docs  *dataplane.DocsRun
	steps map[string][]harness.CodeBlock
	// removed checks what removing ouroboros leaves, beyond its objects.
	removed func(ctx context.Context, dc dynamic.Interface) error
	// backProxy is ouroboros's proxy's ClusterIP on the way back, and
	// backAvailable when every replica of it was available.
	backProxy     string
	backAvailable time.Time
}

// pageSteps returns page's blocks marked to run on shape, by step, and
// fails the test unless its steps are want, in that order.
func pageSteps(t *testing.T, page, shape string, want []string) map[string][]harness.CodeBlock {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(harness.RepoDir(t), page))
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string][]harness.CodeBlock{}
	var order []string
	for _, b := range harness.CodeBlocks(string(text)) {
		how, rest, _ := strings.Cut(b.Marker, " ")
		s, step, _ := strings.Cut(rest, " ")
		if how != "on" || s != shape {
			continue
		}
		if len(order) == 0 || order[len(order)-1] != step {
			order = append(order, step)
		}
		steps[step] = append(steps[step], b)
	}
	if !slices.Equal(order, want) {
		t.Fatalf("%s's steps on %s are %v; the test runs %v", page, shape, order, want)
	}
	return steps
}

// runStep runs the page's blocks of step.
func (m *migration) runStep(step string) {
	m.t.Helper()
	for _, b := range m.steps[step] {
		m.must(m.docs.RunBlock(m.ctx, migratePage, b, false, m.t.Logf), step)
	}
}

func migrate(t *testing.T, shape migrationShape) {
	start := time.Now()
	e := shape.start(t)
	t.Logf("the %s cluster is up %s after the start", shape.name, time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	ic := shape.ic
	m := &migration{
		lifecycleRun: &lifecycleRun{t: t, mode: shape.name, e: e, ctx: ctx, hosts: []string{ic.Hosts[0]}},
		host:         ic.Hosts[0],
		steps:        pageSteps(t, migratePage, shape.name, migrationSteps),
		o:            shape.o,
		removed:      shape.removed,
	}
	var err error
	m.dc, err = dynamic.NewForConfig(e.CP.Config)
	m.must(err, "dynamic client")
	m.ctl, err = e.RunOuroboros(t, m.o, shape.tenant)
	m.must(err, "ouroboros's stand-ins")
	m.docs, err = e.NewDocsRun(ctx, t)
	m.must(err, "the docs' commands")

	// The starting state: Cozystack installs ouroboros, whose controller
	// writes its lines and whose proxy serves the host.
	m.must(shape.seed(ctx, e, m.dc), "what installs ouroboros")
	m.proxy = m.ouroborosServes()
	t.Logf("ouroboros serves %s through %s, %s after the start", m.host, m.proxy, time.Since(start).Round(time.Millisecond))

	m.client, err = e.StartSteady(m.host)
	m.must(err, "steady client")
	m.keepAlive, err = e.StartKeepAlive(m.host)
	m.must(err, "keep-alive client")
	defer m.stopAndReport(start)

	m.installHairpin(ic)
	m.stopController()
	removed := m.takeLinesOut()
	m.waitReloaded(removed)
	m.removeOuroboros()
	m.back()
	m.uninstallHairpin()
}

// ouroborosServes waits until ouroboros's proxy is rolled out and every
// kube-dns replica answers the host with its ClusterIP, through which a
// request reaches the controller, and returns that address.
func (m *migration) ouroborosServes() string {
	ctx, cancel := context.WithTimeout(m.ctx, 4*time.Minute)
	defer cancel()
	var svcIP netip.Addr
	m.must(harness.Poll(ctx, func(ctx context.Context) error {
		svc, err := m.e.CP.Clientset.CoreV1().Services(m.o.Namespace).Get(ctx, m.o.ProxyName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		svcIP, err = netip.ParseAddr(svc.Spec.ClusterIP)
		return err
	}), "ouroboros's proxy Service")
	m.must(m.e.WaitDeployment(ctx, m.o.Namespace, m.o.ProxyName()), "ouroboros's proxy rollout")
	m.must(m.e.WaitResolves(ctx, m.host, svcIP), "every replica answers with ouroboros's proxy")
	_, err := m.e.WaitCurl(ctx, "http://"+m.host+"/")
	m.must(err, "a request through ouroboros's proxy")
	return svcIP.String()
}

// servedBy judges DNS answers (one of addrs) and HTTP (any failure fails).
func servedBy(addrs ...string) steady.Judge {
	return func(res steady.Result) (bool, bool) {
		if res.Kind != steady.KindDNS {
			return true, res.Fail != ""
		}
		for _, a := range addrs {
			if steady.Answered(res, a) {
				return true, false
			}
		}
		return true, true
	}
}

// installHairpin: step 1, the chart with Cozystack's example. It is
// inert behind the rewrite: every answer stays ouroboros's. The check
// names the host as shadowed.
func (m *migration) installHairpin(ic cluster.IngressController) {
	m.begin("install-hairpin", servedBy(m.proxy))
	m.runStep("install-hairpin")
	ip, err := m.e.TargetIP(m.ctx, ic)
	m.must(err, "the host's target")
	m.target = ip.String()
	m.checkShadowed(true)
	time.Sleep(settle)
}

// checkShadowed runs `kubectl hairpin check` and wants its hosts-shadowed
// finding for the host (want) or none.
func (m *migration) checkShadowed(want bool) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(m.ctx, 2*time.Minute)
	defer cancel()
	var report *dataplane.CheckReport
	err := harness.PollEvery(ctx, 5*time.Second, func(ctx context.Context) error {
		var err error
		if report, err = m.e.Check(ctx); err != nil {
			return err
		}
		if got := dataplane.Mentions(report.Warned("hosts-shadowed"), m.host); got != want {
			return fmt.Errorf("hosts-shadowed names %s: %v, want %v", m.host, got, want)
		}
		return nil
	})
	if report != nil {
		m.t.Logf("kubectl hairpin check (exit %d):\n%s", report.Exit, report.Table)
	}
	m.must(err, "kubectl hairpin check")
}

// stopController: step 2, controller.enabled: false in the ouroboros
// Package's values. The chart then renders no controller; its proxy
// stays, and so do its lines.
func (m *migration) stopController() {
	m.begin("stop-controller", servedBy(m.proxy))
	m.runStep("stop-controller")
	m.must(harness.Poll(m.ctx, func(ctx context.Context) error {
		if running, err := m.ctl.Running(ctx); err != nil || running {
			return fmt.Errorf("ouroboros's controller still runs (%v)", err)
		}
		return nil
	}), "the controller's end")
	_, err := m.e.CP.Clientset.AppsV1().Deployments(m.o.Namespace).Get(m.ctx, m.o.ProxyName(), metav1.GetOptions{})
	m.must(err, "ouroboros's proxy after controller.enabled: false")
	time.Sleep(settle)
}

// takeLinesOut: step 3, the marked block stripped (or the key removed).
// Replica by replica, as each reloads, the answer becomes our target's.
func (m *migration) takeLinesOut() time.Time {
	m.begin("take-lines-out", servedBy(m.proxy, m.target))
	m.runStep("take-lines-out")
	removed := time.Now()
	has, err := m.o.HasLines(m.ctx, m.e.CP.Clientset)
	m.must(err, "ouroboros's lines")
	if has {
		m.t.Fatalf("ouroboros's lines are still in kube-system/coredns after the page's step")
	}
	return removed
}

// waitReloaded: step 4, until every kube-dns replica answers the host
// with our target's address: each has loaded a configuration without the
// rewrite. The lines stay out past the controller's resync: a controller
// still running would have written them back by then.
func (m *migration) waitReloaded(removed time.Time) {
	m.begin("wait-reloaded", servedBy(m.proxy, m.target))
	m.runStep("wait-reloaded")
	ctx, cancel := context.WithTimeout(m.ctx, 3*time.Minute)
	defer cancel()
	m.must(m.e.WaitResolves(ctx, m.host, netip.MustParseAddr(m.target)), "every replica answers with our target")
	m.t.Logf("wait-reloaded: every replica answered with our target %s after the lines were taken out", time.Since(removed).Round(time.Millisecond))
	m.must(m.o.LinesStayOut(ctx, m.e.CP.Clientset, removed, dataplane.OuroborosResync), "the lines stay out")
	m.must(m.e.WaitResolves(ctx, m.host, netip.MustParseAddr(m.target)), "every replica answers with our target")
}

// removeOuroboros: step 5 on the management cluster. The platform stops
// emitting the Package (bundles.disabledPackages), which is kept until
// deleted; deleting it uninstalls ouroboros. Nothing is shadowed any
// more.
func (m *migration) removeOuroboros() {
	m.begin("remove-ouroboros", servedBy(m.target))
	m.runStep("remove-ouroboros")
	m.waitOuroborosGone()
	if m.removed != nil {
		m.must(m.removed(m.ctx, m.dc), "ouroboros's removal")
	}
	m.checkShadowed(false)
	time.Sleep(settle)
}

// waitOuroborosGone waits until ouroboros's proxy Service and Deployments
// are gone.
func (m *migration) waitOuroborosGone() {
	cs := m.e.CP.Clientset
	m.must(harness.Poll(m.ctx, func(ctx context.Context) error {
		if _, err := cs.CoreV1().Services(m.o.Namespace).Get(ctx, m.o.ProxyName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ouroboros's proxy Service is still there (%v)", err)
		}
		deps, err := cs.AppsV1().Deployments(m.o.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(deps.Items) > 0 {
			return fmt.Errorf("ouroboros's Deployments: %d (%v)", len(deps.Items), err)
		}
		return nil
	}), "ouroboros's uninstall")
}

// back is the way back to ouroboros: the platform emits its Package
// again, which installs it with its controller; its proxy is ready before
// any replica loads the controller's lines (a reload takes at least the
// reload plugin's 15 s), so the answers move to it with nothing lost.
func (m *migration) back() {
	deps := m.e.CP.Clientset.AppsV1().Deployments(m.o.Namespace)
	available := pollFirst(m.ctx, 100*time.Millisecond, func(ctx context.Context) error {
		d, err := deps.Get(ctx, m.o.ProxyName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Spec.Replicas == nil || d.Status.AvailableReplicas < *d.Spec.Replicas {
			return fmt.Errorf("ouroboros's proxy has %d available replicas", d.Status.AvailableReplicas)
		}
		return nil
	})
	op := m.begin("back-to-ouroboros", nil)
	m.runStep("back-to-ouroboros")
	proxy := m.ouroborosServes()
	op.judge = servedBy(m.target, proxy)
	m.backProxy, m.backAvailable = proxy, available.wait(m.t, "ouroboros's proxy available")
	m.t.Logf("back-to-ouroboros: ouroboros's proxy was available %s after the step began; every replica answered with it (%s) %s after",
		m.backAvailable.Sub(op.from).Round(time.Millisecond), proxy, time.Since(op.from).Round(time.Millisecond))
	m.proxy = proxy
	time.Sleep(settle)
}

// backInOrder fails the test unless the first answer with ouroboros's
// proxy, on the way back, came after that proxy was available: the order
// that leaves no gap, measured rather than assumed.
func (m *migration) backInOrder(results []steady.Result) {
	if m.backProxy == "" {
		return
	}
	for _, res := range results {
		if steady.Answered(res, m.backProxy) {
			m.t.Logf("back-to-ouroboros: the first answer with ouroboros's proxy came %s after it was available", res.At.Sub(m.backAvailable).Round(time.Millisecond))
			if res.At.Before(m.backAvailable) {
				m.t.Errorf("back-to-ouroboros: a replica answered with ouroboros's proxy at %s, before it was available", res.At.UTC().Format("15:04:05.000"))
			}
			return
		}
	}
}

// uninstallHairpin: ours goes, inert behind the rewrite again.
func (m *migration) uninstallHairpin() {
	m.begin("uninstall-hairpin", servedBy(m.proxy))
	m.runStep("uninstall-hairpin")
	m.must(m.e.WaitNothingLeft(m.ctx), "uninstall")
	time.Sleep(settle)
}

// stopAndReport stops both clients and prints each step's lines.
func (m *migration) stopAndReport(start time.Time) {
	m.backInOrder(m.stopAndJudge())
	m.t.Logf("lifecycle: %s took %s; ouroboros's controller reconciled %d times, %d of them writing its lines", m.mode,
		time.Since(start).Round(time.Second), m.ctl.Reconciles(), m.ctl.Rewrites())
}
