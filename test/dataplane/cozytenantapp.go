package dataplane

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// KubernetesAppResource is Cozystack's tenant Kubernetes application,
// whose fixture CRD the folder [CozystackCRDs] holds.
var KubernetesAppResource = schema.GroupVersionResource{Group: "apps.cozystack.io", Version: "v1alpha1", Resource: "kuberneteses"}

// The tenant's Kubernetes application of the tests: the app foo in the
// tenant's namespace tenant-foo on the management cluster (the test
// cluster is its own management cluster, as in the docs test).
const (
	TenantAppNamespace = "tenant-foo"
	TenantAppName      = "foo"
)

// TenantAppOperator stands in for what Cozystack does with a tenant's
// addons.ouroboros (cozystack/cozystack at 3c780acd4,
// packages/apps/kubernetes/templates/helmreleases/ouroboros.yaml): while
// enabled, a HelmRelease installs the cozy-ouroboros chart into the
// tenant, release ouroboros in cozy-ouroboros, mode coredns-import, with
// valuesOverride merged over those defaults (its key ouroboros holds
// the chart's values); once disabled, the HelmRelease is gone and Flux
// uninstalls the release, its pre-delete hook first.
type TenantAppOperator struct {
	DC dynamic.Interface
	CS kubernetes.Interface
	O  *Ouroboros
	// Poll is how often it reconciles.
	Poll time.Duration

	installed bool
}

// Run reconciles until ctx ends; errors are retried at the next poll.
func (op *TenantAppOperator) Run(ctx context.Context) {
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

// Reconcile does once what Cozystack and Flux do with the addon.
func (op *TenantAppOperator) Reconcile(ctx context.Context) error {
	app, err := op.DC.Resource(KubernetesAppResource).Namespace(TenantAppNamespace).Get(ctx, TenantAppName, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cozystack: %w", err)
	}
	var on bool
	var values map[string]any
	if err == nil {
		on, _, _ = unstructured.NestedBool(app.Object, "spec", "addons", "ouroboros", "enabled")
		values, _, _ = unstructured.NestedMap(app.Object, "spec", "addons", "ouroboros", "valuesOverride", "ouroboros")
	}
	switch {
	case on:
		if err := op.O.Apply(ctx, op.CS, values); err != nil {
			return err
		}
		op.installed = true
	case op.installed:
		if err := op.O.Uninstall(ctx, op.CS); err != nil {
			return err
		}
		op.installed = false
	}
	return nil
}

// TenantAppObject is the tenant's Kubernetes application with its
// ingress-nginx and ouroboros addons on, as a tenant that runs ouroboros
// has it before the migration.
func TenantAppObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.cozystack.io/v1alpha1",
		"kind":       "Kubernetes",
		"metadata":   map[string]any{"name": TenantAppName, "namespace": TenantAppNamespace},
		"spec": map[string]any{"addons": map[string]any{
			"ingressNginx": map[string]any{"enabled": true},
			"ouroboros":    map[string]any{"enabled": true, "valuesOverride": map[string]any{}},
		}},
	}}
}

// TenantCoreDNSAddon stands in for what Cozystack does with a tenant's
// addons.coredns.valuesOverride (cozystack/cozystack at 3c780acd4,
// packages/apps/kubernetes/templates/helmreleases/coredns.yaml: the
// HelmRelease of the cozystack-coredns chart, valuesOverride merged over
// its values; packages/system/coredns/values.yaml: the upstream chart's
// image under coredns.image, repository and tag): while the override
// names an image, the tenant's kube-dns Deployment runs it; without one,
// the addon's own image. The addon's own image is [StockCoreDNSImage]
// here (Cozystack's is registry.k8s.io/coredns/coredns:v1.12.4, which
// no node here runs: the same repository, upstream CoreDNS at our
// version).
type TenantCoreDNSAddon struct {
	DC dynamic.Interface
	E  *Env
	// Poll is how often it reconciles.
	Poll time.Duration
}

// Run reconciles until ctx ends; errors are retried at the next poll.
func (a *TenantCoreDNSAddon) Run(ctx context.Context) {
	t := time.NewTicker(a.Poll)
	defer t.Stop()
	for {
		_ = a.Reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Reconcile does once what Cozystack and Flux do with the addon's image:
// the Deployment rolled out with the image the app's values give.
func (a *TenantCoreDNSAddon) Reconcile(ctx context.Context) error {
	app, err := a.DC.Resource(KubernetesAppResource).Namespace(TenantAppNamespace).Get(ctx, TenantAppName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("cozystack: %w", err)
	}
	want := StockCoreDNSImage()
	repo, _, _ := unstructured.NestedString(app.Object, "spec", "addons", "coredns", "valuesOverride", "coredns", "image", "repository")
	tag, _, _ := unstructured.NestedString(app.Object, "spec", "addons", "coredns", "valuesOverride", "coredns", "image", "tag")
	if repo != "" && tag != "" {
		want = repo + ":" + tag
	}
	got, err := a.E.CoreDNSImageNow(ctx)
	if err != nil || got == want {
		return err
	}
	return a.E.SetCoreDNSImage(ctx, want)
}

// TenantAppWithoutOuroboros is the tenant's Kubernetes application with
// its ingress-nginx addon on and no ouroboros: a tenant on the day it
// adopts coredns-hairpin without having run ouroboros.
func TenantAppWithoutOuroboros() *unstructured.Unstructured {
	app := TenantAppObject()
	unstructured.RemoveNestedField(app.Object, "spec", "addons", "ouroboros")
	return app
}
