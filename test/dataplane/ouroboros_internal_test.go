package dataplane

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// standInCluster is a fake cluster with Talos's Corefile, an empty
// coredns-custom and one Ingress host, and ouroboros in mode on it.
func standInCluster(t *testing.T, mode string) (kubernetes.Interface, *Ouroboros) {
	t.Helper()
	corefile, err := e2e.DistributionCorefile("talos")
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"}, Data: map[string]string{"Corefile": corefile}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: CustomConfigMap, Namespace: "kube-system"}},
		&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "tenant-root"}, Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{Host: "keycloak.example.org"}},
		}},
	)
	return cs, &Ouroboros{Namespace: "cozy-ouroboros", Release: "ouroboros", Mode: mode, ClusterDomain: "cozy.local",
		Upstream: "tenant-root/root-ingress-controller", ProxyImage: "proxy", ControllerImage: "controller"}
}

// fastResync is the stand-in controller's resync in the unit tests.
const fastResync = 100 * time.Millisecond

// startController runs o's controller stand-in on cs until the test ends.
func startController(t *testing.T, cs kubernetes.Interface, o *Ouroboros) *OuroborosController {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	c := &OuroborosController{O: o, CS: cs, Resync: fastResync, Poll: 10 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

// waitLines waits until the lines are in (want) or out of CoreDNS's
// ConfigMap.
func waitLines(t *testing.T, cs kubernetes.Interface, o *Ouroboros, want bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := harness.PollEvery(ctx, 10*time.Millisecond, func(ctx context.Context) error {
		if has, err := o.HasLines(ctx, cs); err != nil || has != want {
			return fmt.Errorf("lines in: %v (%v), want %v", has, err, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestOuroborosControllerWritesItsLinesBackUntilItIsStopped is the
// negative case of the migration: while the controller stand-in runs,
// lines taken out come back within its resync, and LinesStayOut, which
// TestMigrateFromOuroboros asserts after taking them out, fails; once
// its Deployment is gone (controller.enabled: false) or scaled to 0, they
// stay out and LinesStayOut passes.
func TestOuroborosControllerWritesItsLinesBackUntilItIsStopped(t *testing.T) {
	for _, mode := range []string{OuroborosCoreDNS, OuroborosImport} {
		for _, stop := range []string{"ControllerDisabled", "ScaledToZero"} {
			t.Run(mode+"/"+stop, func(t *testing.T) {
				cs, o := standInCluster(t, mode)
				ctx := t.Context()
				if err := o.Apply(ctx, cs, nil); err != nil {
					t.Fatal(err)
				}
				c := startController(t, cs, o)
				waitLines(t, cs, o, true)

				// Forgotten: the controller runs on.
				if err := o.RemoveLines(ctx, cs); err != nil {
					t.Fatal(err)
				}
				removed := time.Now()
				if err := o.LinesStayOut(ctx, cs, removed, fastResync); err == nil {
					t.Fatalf("LinesStayOut passed with the controller running (%d rewrites)", c.Rewrites())
				}

				switch stop {
				case "ControllerDisabled":
					values := map[string]any{"controller": map[string]any{"enabled": false}}
					if err := o.Apply(ctx, cs, values); err != nil {
						t.Fatal(err)
					}
					if _, err := cs.AppsV1().Deployments(o.Namespace).Get(ctx, o.ProxyName(), metav1.GetOptions{}); err != nil {
						t.Errorf("controller.enabled: false took the proxy too: %v", err)
					}
				case "ScaledToZero":
					patch := []byte(`{"spec":{"replicas":0}}`)
					if _, err := cs.AppsV1().Deployments(o.Namespace).Patch(ctx, o.ControllerName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(5 * c.Poll) // its Pod ends
				if err := o.RemoveLines(ctx, cs); err != nil {
					t.Fatal(err)
				}
				if err := o.LinesStayOut(ctx, cs, time.Now(), fastResync); err != nil {
					t.Fatalf("stopped by %s: %v", stop, err)
				}
			})
		}
	}
}

// TestOuroborosRendersItsLinesAsItsCodeDoes: the coredns mode's block is
// harness.OuroborosCorefile's, written once however often it reconciles,
// the import mode's key harness.OuroborosOverride's; both name the proxy
// Service of Cozystack's release.
func TestOuroborosRendersItsLinesAsItsCodeDoes(t *testing.T) {
	for _, mode := range []string{OuroborosCoreDNS, OuroborosImport} {
		t.Run(mode, func(t *testing.T) {
			cs, o := standInCluster(t, mode)
			ctx := t.Context()
			for range 2 {
				if _, err := o.WriteLines(ctx, cs, []string{"keycloak.example.org"}); err != nil {
					t.Fatal(err)
				}
			}
			const line = "rewrite name keycloak.example.org ouroboros-proxy.cozy-ouroboros.svc.cozy.local."
			cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, o.configMap(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := cm.Data["Corefile"]
			if mode == OuroborosImport {
				got = cm.Data[OuroborosImportKey]
			}
			if strings.Count(got, line) != 1 {
				t.Errorf("%s writes:\n%s\nwant %q once", mode, got, line)
			}
		})
	}
}

// TestCozyOperatorActsOnPackagesAsCozystackDoes: the platform emits the
// ouroboros Package while proxyProtocol is on and disabledPackages does
// not list it (a deleted Package comes back), the Package's values turn
// the controller off and keep the proxy, and a Package deleted once the
// platform no longer emits it uninstalls ouroboros: its hook strips the
// lines, its objects go.
func TestCozyOperatorActsOnPackagesAsCozystackDoes(t *testing.T) {
	cs, o := standInCluster(t, OuroborosCoreDNS)
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{PackageResource: "PackageList"}, PlatformPackageObject())
	op := &CozyOperator{DC: dc, CS: cs, O: o}
	ctx := t.Context()
	pkgs := dc.Resource(PackageResource)
	reconcile := func(n int) {
		t.Helper()
		for range n {
			if err := op.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	exists := func(name string) bool {
		_, err := cs.AppsV1().Deployments(o.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}

	reconcile(2)
	if !exists(o.ControllerName()) || !exists(o.ProxyName()) {
		t.Fatal("the platform with proxyProtocol on did not install ouroboros")
	}
	patch := `{"spec":{"components":{"ouroboros":{"values":{"ouroboros":{"controller":{"enabled":false}}}}}}}`
	if _, err := pkgs.Patch(ctx, OuroborosPackage, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	reconcile(1)
	if exists(o.ControllerName()) || !exists(o.ProxyName()) {
		t.Fatal("controller.enabled: false in the Package's values: want the controller gone and the proxy kept")
	}
	if _, err := o.WriteLines(ctx, cs, []string{"keycloak.example.org"}); err != nil {
		t.Fatal(err)
	}

	// Deleted while the platform still emits it: back at once.
	if err := pkgs.Delete(ctx, OuroborosPackage, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	reconcile(1)
	if _, err := pkgs.Get(ctx, OuroborosPackage, metav1.GetOptions{}); err != nil {
		t.Fatalf("the platform did not emit %s again: %v", OuroborosPackage, err)
	}

	disable := `{"spec":{"components":{"platform":{"values":{"bundles":{"disabledPackages":["cozystack.ouroboros"]}}}}}}`
	if _, err := pkgs.Patch(ctx, PlatformPackage, types.MergePatchType, []byte(disable), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	reconcile(1)
	if _, err := pkgs.Get(ctx, OuroborosPackage, metav1.GetOptions{}); err != nil {
		t.Fatalf("disabling the package deleted %s; it is kept: %v", OuroborosPackage, err)
	}
	if err := pkgs.Delete(ctx, OuroborosPackage, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	reconcile(2)
	if exists(o.ControllerName()) || exists(o.ProxyName()) {
		t.Fatal("the deleted Package left ouroboros's Deployments")
	}
	if _, err := cs.CoreV1().Services(o.Namespace).Get(ctx, o.ProxyName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the deleted Package left the proxy Service: %v", err)
	}
	if has, err := o.HasLines(ctx, cs); err != nil || has {
		t.Fatalf("lines after the uninstall: %v, %v; the pre-delete hook strips them", has, err)
	}
	if _, err := pkgs.Get(ctx, OuroborosPackage, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("%s came back with the package disabled: %v", OuroborosPackage, err)
	}

	// The way back: the platform emits it again, and it installs.
	enable := `{"spec":{"components":{"platform":{"values":{"bundles":{"disabledPackages":null}}}}}}`
	if _, err := pkgs.Patch(ctx, PlatformPackage, types.MergePatchType, []byte(enable), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	reconcile(2)
	if !exists(o.ControllerName()) || !exists(o.ProxyName()) {
		t.Fatal("re-enabling the package did not install ouroboros")
	}
}
