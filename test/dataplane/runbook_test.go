package dataplane_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/coredns-hairpin/hairpin/test/dataplane"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
)

// cozystackPage is the Cozystack runbook: a section per cluster shape,
// each block marked `<!-- docs-test: on SHAPE STEP -->`.
const cozystackPage = "docs/install/cozystack.md"

// runbookSteps are the runbook's steps on each shape, in the order the
// page must have them: the check on the broken cluster, our CoreDNS image,
// the chart, the verification, and the way back.
var runbookSteps = []string{"check-broken", "coredns-image", "install", "verify", "rollback"}

// runbook is one run of a section of the runbook on a cluster of its
// shape, from the cluster as its distribution leaves it (kube-dns on the
// distribution's own CoreDNS image) to the same cluster after the way
// back.
type runbook struct {
	t     *testing.T
	ctx   context.Context
	e     *dataplane.Env
	d     *dataplane.DocsRun
	shape string
	ics   []cluster.IngressController
	// step is the step being run: what a stand-in of the section's
	// platform does depends on it.
	step string
}

// runCozystackRunbook runs docs/install/cozystack.md's section for shape
// on e, whose controllers are ics, end to end: every block of each step
// as the docs test runs a block (what the page says a command prints
// included), then the step's outcome, checked by the test itself. On the
// management cluster, Talos's commands (talm, talosctl) are stand-ins that
// do what `talosctl upgrade-k8s` does with the machine config's
// cluster.coreDNS.image; on a tenant, the kubernetes app is the fixture
// of TestMigrateFromOuroboros and dataplane.TenantCoreDNSAddon rolls its
// addons.coredns.valuesOverride out as Cozystack would.
func runCozystackRunbook(t *testing.T, e *dataplane.Env, shape string, ics []cluster.IngressController) {
	t.Helper()
	t.Run("Runbook", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 12*time.Minute)
		defer cancel()
		steps := pageSteps(t, cozystackPage, shape, runbookSteps)
		d, err := e.NewDocsRun(ctx, t)
		if err != nil {
			t.Fatal(err)
		}
		d.Ordered = true
		r := &runbook{t: t, ctx: ctx, e: e, d: d, shape: shape, ics: ics}
		// The cluster as its distribution runs it: CoreDNS on its own
		// image.
		if err := e.UseStockCoreDNS(ctx); err != nil {
			t.Fatal(err)
		}
		if shape == "cozystack-tenant" {
			r.tenantsApp()
		} else {
			r.talos()
		}
		for _, step := range runbookSteps {
			r.step = step
			for _, b := range steps[step] {
				if err := d.RunBlock(ctx, cozystackPage, b, false, t.Logf); err != nil {
					t.Fatalf("%s: %v", step, err)
				}
			}
			r.outcome(step)
		}
	})
}

// talos makes the page's talm and talosctl commands stand-ins of Talos on
// the management cluster: kube-dns starts on Talos's own image, a command
// that patches the machine config (talm apply, talosctl patch mc) changes
// nothing running, and `talosctl upgrade-k8s` rolls kube-dns out with the
// image the machine config names: ours after the step that pins it,
// Talos's own after the way back drops it (siderolabs/talos
// pkg/cluster/kubernetes, see docs/install/talos.md).
func (r *runbook) talos() {
	if err := r.e.SetCoreDNSImage(r.ctx, dataplane.StockCoreDNSImage()); err != nil {
		r.t.Fatalf("kube-dns on Talos's own image: %v", err)
	}
	standIn := func(ctx context.Context, command string) error {
		if !strings.Contains(command, "upgrade-k8s") {
			r.t.Logf("%s: %q patches the machine config; upgrade-k8s rolls it out", r.step, command)
			return nil
		}
		image := dataplane.StockCoreDNSImage()
		if r.step == "coredns-image" {
			image = r.e.CoreDNSImage()
		}
		r.t.Logf("%s: %q rolls kube-dns out with %s, as Talos does", r.step, command, image)
		return r.e.SetCoreDNSImage(ctx, image)
	}
	r.d.StandIns = map[string]func(context.Context, string) error{"talm": standIn, "talosctl": standIn}
}

// tenantsApp makes the test cluster its own management cluster, as the
// page's tenant section needs it: the Secret with the tenant's admin
// kubeconfig, the tenant's kubernetes app
// without ouroboros, and the stand-in that rolls the app's CoreDNS addon
// out, which puts kube-dns on the addon's own image first.
func (r *runbook) tenantsApp() {
	r.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := r.d.RemoveTenantKubeconfig(ctx); err != nil {
			r.t.Errorf("the page's tenant: %v", err)
		}
	})
	if err := r.d.WriteTenantKubeconfig(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(r.e.CP.Config)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := dc.Resource(dataplane.KubernetesAppResource).Namespace(dataplane.TenantAppNamespace).Create(r.ctx, dataplane.TenantAppWithoutOuroboros(), metav1.CreateOptions{}); err != nil {
		r.t.Fatalf("the tenant's kubernetes app: %v", err)
	}
	addon := &dataplane.TenantCoreDNSAddon{DC: dc, E: r.e, Poll: time.Second}
	if err := addon.Reconcile(r.ctx); err != nil {
		r.t.Fatalf("kube-dns on the addon's own image: %v", err)
	}
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() { addon.Run(ctx); close(done) }()
	r.t.Cleanup(func() { cancel(); <-done })
}

// outcome checks what step left, beyond what the page's commands print.
func (r *runbook) outcome(step string) {
	t, ctx := r.t, r.ctx
	switch step {
	case "coredns-image":
		r.imageIs(r.e.CoreDNSImage())
	case "verify":
		// Each class's hosts reach their target, not the section's first
		// host only.
		for _, ic := range r.ics {
			target, err := r.e.TargetIP(ctx, ic)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.e.WaitResolves(ctx, ic.Hosts[0], target); err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			body, err := r.e.WaitCurl(ctx, "http://"+ic.Hosts[0]+"/")
			if want := "controller=" + ic.Namespace; err != nil || !strings.Contains(body, want) {
				t.Fatalf("%s: http://%s from the client pod: %q, %v; want %s", step, ic.Hosts[0], body, err, want)
			}
		}
	case "rollback":
		r.imageIs(dataplane.StockCoreDNSImage())
		if err := r.e.WaitNothingLeft(ctx); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		for _, ic := range r.ics {
			if err := r.e.WaitResolves(ctx, ic.Hosts[0], ic.LBIP); err != nil {
				t.Fatalf("%s: %s is not public again: %v", step, ic.Hosts[0], err)
			}
		}
	}
}

// imageIs fails the test unless kube-dns runs image, rolled out.
func (r *runbook) imageIs(image string) {
	r.t.Helper()
	err := harness.Poll(r.ctx, func(ctx context.Context) error {
		got, err := r.e.CoreDNSImageNow(ctx)
		if err != nil || got != image {
			return fmt.Errorf("kube-dns runs %q (%v); want %s", got, err, image)
		}
		return r.e.WaitDeployment(ctx, "kube-system", "coredns")
	})
	if err != nil {
		r.t.Fatalf("%s: %v", r.step, err)
	}
}

// checksInstallCommandInstalls (issue 44): on a Cozystack-shaped cluster
// with nothing of ours installed, `kubectl hairpin check` prints one
// complete install command, which a user pastes as it is (the released
// chart mapped to this checkout's, as the docs test maps it): it
// installs, the check then passes, and a Pod's curl reaches each class's
// own controller. The uninstall leaves the cluster as it was.
func checksInstallCommandInstalls(ctx context.Context, t *testing.T, e *dataplane.Env, ics []cluster.IngressController) {
	t.Helper()
	r := check(ctx, t, e)
	if r.Exit != 1 {
		t.Fatalf("kubectl hairpin check exited %d with nothing installed; want 1\n%s", r.Exit, r.Table)
	}
	var commands []string
	for _, l := range strings.Split(r.Table, "\n") {
		if i := strings.Index(l, "helm install "); i >= 0 && strings.HasPrefix(strings.TrimSpace(l), "hint:") {
			cmd, _, _ := strings.Cut(l[i:], ";")
			commands = append(commands, cmd)
		}
	}
	if len(commands) != 1 {
		t.Fatalf("the check printed %d install commands %q; want one\n%s", len(commands), commands, r.Table)
	}
	d, err := e.NewDocsRun(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	pasted := d.SubstitutePasted(commands[0])
	t.Logf("pasting %s", pasted)
	if out, err := d.Run(ctx, pasted); err != nil {
		t.Fatalf("the check's install command: %v\n%s", err, out)
	}
	if err := e.WaitDeployment(ctx, dataplane.TargetNamespace, "hairpin-proxy"); err != nil {
		t.Fatal(err)
	}
	checkPassesAfterInstall(ctx, t, e)
	for _, ic := range ics {
		target, err := e.TargetIP(ctx, ic)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.WaitResolves(ctx, ic.Hosts[0], target); err != nil {
			t.Fatal(err)
		}
		body, err := e.WaitCurl(ctx, "http://"+ic.Hosts[0]+"/")
		if want := fmt.Sprintf("client=%s controller=%s", e.ClientIP(), ic.Namespace); err != nil || !strings.Contains(body, want) {
			t.Errorf("http://%s from the client pod: %q, %v; want %q", ic.Hosts[0], body, err, want)
		}
	}
	uninstallRestoresThePublicAnswers(ctx, t, e, ics)
}

// TestCozystackRunbookHasItsSteps: each section of the runbook has the
// steps the tests run, in their order, and every step but the
// installation states what it prints, so that the runbook's claims are
// asserted where it runs (TestCozystackManagementCluster,
// TestCozystackTenantCluster). It needs no cluster.
func TestCozystackRunbookHasItsSteps(t *testing.T) {
	for _, shape := range []string{"cozystack-management", "cozystack-tenant"} {
		t.Run(shape, func(t *testing.T) {
			steps := pageSteps(t, cozystackPage, shape, runbookSteps)
			for _, step := range runbookSteps {
				var prints []string
				for _, b := range steps[step] {
					prints = append(prints, b.Prints...)
				}
				t.Logf("%s: %d blocks, prints %q", step, len(steps[step]), prints)
				if len(prints) == 0 {
					t.Errorf("%s's step %s on %s states no output to assert", cozystackPage, step, shape)
				}
			}
		})
	}
}
