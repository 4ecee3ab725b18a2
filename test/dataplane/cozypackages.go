package dataplane

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// PackageResource is Cozystack's Package (cluster-scoped), whose CRD the
// folder [CozystackCRDs] holds.
var PackageResource = schema.GroupVersionResource{Group: "cozystack.io", Version: "v1alpha1", Resource: "packages"}

// The Packages of Cozystack's management cluster that a migration off
// ouroboros acts on.
const (
	// PlatformPackage holds the platform's values: publishing.proxyProtocol,
	// bundles.disabledPackages.
	PlatformPackage = "cozystack.cozystack-platform"
	// OuroborosPackage installs ouroboros; its component is `ouroboros`.
	OuroborosPackage = "cozystack.ouroboros"
)

// CozystackCRDs is the folder of Cozystack's Package CRD, a fixture
// copied from Cozystack's schema (testdata/cozystack).
func CozystackCRDs(t testing.TB) string {
	return filepath.Join(harness.RepoDir(t), "test", "dataplane", "testdata", "cozystack")
}

// CozyOperator stands in for what Cozystack does with the two Packages
// (its platform chart, cozystack-operator, Flux's helm-controller and
// Helm, in one loop). From cozystack/cozystack at 3c780acd4:
//
//   - the platform emits the Package cozystack.ouroboros while
//     publishing.proxyProtocol is true and bundles.disabledPackages does
//     not list it (packages/core/platform/templates/bundles/system.yaml),
//     with proxy.target the root tenant's ingress; a Package it no longer
//     emits stays (helm.sh/resource-policy: keep);
//   - a Package installs its PackageSource's component with the
//     Package's values for it merged in
//     (internal/crdinstall/manifests/cozystack.io_packages.yaml): here
//     the chart ouroboros, values under the key ouroboros (the
//     cozy-ouroboros wrapper chart, packages/system/ouroboros), release
//     ouroboros in cozy-ouroboros (packages/core/platform/sources/
//     ouroboros.yaml);
//   - a Package deleted is uninstalled: helm uninstall, its pre-delete
//     hook first.
type CozyOperator struct {
	DC dynamic.Interface
	CS kubernetes.Interface
	O  *Ouroboros
	// Poll is how often it reconciles.
	Poll time.Duration

	installed bool
}

// Run reconciles until ctx ends; errors are retried at the next poll, as
// the operators retry.
func (op *CozyOperator) Run(ctx context.Context) {
	t := time.NewTicker(op.Poll)
	defer t.Stop()
	for {
		_ = op.Reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Reconcile does once what the operators do with the Packages.
func (op *CozyOperator) Reconcile(ctx context.Context) error {
	pkgs := op.DC.Resource(PackageResource)
	emit := false
	platform, err := pkgs.Get(ctx, PlatformPackage, metav1.GetOptions{})
	switch {
	case err == nil:
		values, _, _ := unstructured.NestedMap(platform.Object, "spec", "components", "platform", "values")
		on, _, _ := unstructured.NestedBool(values, "publishing", "proxyProtocol")
		disabled, _, _ := unstructured.NestedStringSlice(values, "bundles", "disabledPackages")
		emit = on && !slices.Contains(disabled, OuroborosPackage)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("cozystack: %w", err)
	}
	pkg, err := pkgs.Get(ctx, OuroborosPackage, metav1.GetOptions{})
	switch {
	case err == nil:
		values, _, _ := unstructured.NestedMap(pkg.Object, "spec", "components", "ouroboros", "values", "ouroboros")
		if err := op.O.Apply(ctx, op.CS, values); err != nil {
			return err
		}
		op.installed = true
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("cozystack: %w", err)
	case emit:
		_, err := pkgs.Create(ctx, op.ouroborosPackage(), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cozystack: %w", err)
		}
	case op.installed:
		if err := op.O.Uninstall(ctx, op.CS); err != nil {
			return err
		}
		op.installed = false
	}
	return nil
}

// ouroborosPackage is the Package the platform emits: the ouroboros
// component with proxy.target, the Package kept when no longer emitted.
func (op *CozyOperator) ouroborosPackage() *unstructured.Unstructured {
	ns, svc, _ := strings.Cut(op.O.Upstream, "/")
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cozystack.io/v1alpha1",
		"kind":       "Package",
		"metadata": map[string]any{
			"name":        OuroborosPackage,
			"annotations": map[string]any{"helm.sh/resource-policy": "keep"},
		},
		"spec": map[string]any{
			"variant": "default",
			"components": map[string]any{"ouroboros": map[string]any{"values": map[string]any{
				"ouroboros": map[string]any{"proxy": map[string]any{"target": map[string]any{"namespace": ns, "serviceName": svc}}},
			}}},
		},
	}}
}

// PlatformPackageObject is the platform's Package with the PROXY
// protocol on, as docs/migrate.md shows it before the migration.
func PlatformPackageObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cozystack.io/v1alpha1",
		"kind":       "Package",
		"metadata":   map[string]any{"name": PlatformPackage},
		"spec": map[string]any{
			"variant": "default",
			"components": map[string]any{"platform": map[string]any{"values": map[string]any{
				"publishing": map[string]any{"proxyProtocol": true},
			}}},
		},
	}}
}
