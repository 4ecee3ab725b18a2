package main

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"text/tabwriter"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// What the kubectl lines of the demo ask the apiserver, through client-go.

// releaseSelector selects every object the chart renders (hairpin.labels).
const releaseSelector = "app.kubernetes.io/instance=" + release

// rbacKinds are the RBAC kinds, as kubectl names them.
const rbacKinds = "clusterroles,clusterrolebindings,roles,rolebindings"

// targetColumns are the custom columns of the target listing.
const targetColumns = `NAMESPACE:.metadata.namespace,NAME:.metadata.name,CLUSTER-IP:.spec.clusterIP,` +
	`ZONES:.metadata.annotations.hairpin\.coredns-hairpin\.io/zones,` +
	`CLASSES:.metadata.annotations.hairpin\.coredns-hairpin\.io/ingress-classes`

// targetService is one target Service, as the demo shows it.
type targetService struct {
	namespace, name string
	clusterIP       netip.Addr
	zones, classes  string
}

// targetServices lists the Services with the target label, in every
// namespace.
func targetServices(ctx context.Context, cp *harness.ControlPlane) ([]targetService, error) {
	list, err := cp.Clientset.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: e2e.TargetLabel})
	if err != nil {
		return nil, fmt.Errorf("list target Services: %w", err)
	}
	var out []targetService
	for _, s := range list.Items {
		ip, _ := netip.ParseAddr(s.Spec.ClusterIP)
		out = append(out, targetService{s.Namespace, s.Name, ip,
			s.Annotations[e2e.ZonesAnnotation], s.Annotations[e2e.IngressClassesAnnotation]})
	}
	return out, nil
}

// targetTable prints svcs as kubectl prints targetColumns.
func targetTable(svcs []targetService) string {
	if len(svcs) == 0 {
		return "No resources found"
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tNAME\tCLUSTER-IP\tZONES\tCLASSES")
	for _, s := range svcs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.namespace, s.name, s.clusterIP, s.zones, s.classes)
	}
	w.Flush()
	return b.String()
}

// A kind of object the release may leave behind, as kubectl names it.
type kind struct {
	name string // "clusterrole.rbac.authorization.k8s.io"
	gvr  schema.GroupVersionResource
}

var (
	rbac = []kind{
		{"clusterrole.rbac.authorization.k8s.io", rbacv1.SchemeGroupVersion.WithResource("clusterroles")},
		{"clusterrolebinding.rbac.authorization.k8s.io", rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")},
		{"role.rbac.authorization.k8s.io", rbacv1.SchemeGroupVersion.WithResource("roles")},
		{"rolebinding.rbac.authorization.k8s.io", rbacv1.SchemeGroupVersion.WithResource("rolebindings")},
	}
	// workload is every other kind the chart renders outside tenant mode,
	// and ConfigMaps, which it must never render.
	workload = []kind{
		{"deployment.apps", appsv1.SchemeGroupVersion.WithResource("deployments")},
		{"service", corev1.SchemeGroupVersion.WithResource("services")},
		{"serviceaccount", corev1.SchemeGroupVersion.WithResource("serviceaccounts")},
		{"configmap", corev1.SchemeGroupVersion.WithResource("configmaps")},
		{"networkpolicy.networking.k8s.io", netv1.SchemeGroupVersion.WithResource("networkpolicies")},
		{"poddisruptionbudget.policy", policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")},
	}
)

// releaseObjects lists the objects of kinds, in every namespace, that belong
// to the release: those with its label, and any whose name starts with
// "hairpin", in case a template lost its labels. Names are as
// `kubectl get -o name` prints them ("KIND/NAME").
func releaseObjects(ctx context.Context, cp *harness.ControlPlane, kinds []kind) ([]string, error) {
	mc, err := metadata.NewForConfig(cp.Config)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	var out []string
	for _, k := range kinds {
		list, err := mc.Resource(k.gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", k.gvr.Resource, err)
		}
		for _, o := range list.Items {
			if o.Labels["app.kubernetes.io/instance"] != release && !strings.HasPrefix(o.Name, "hairpin") {
				continue
			}
			out = append(out, k.name+"/"+o.Name)
		}
	}
	return out, nil
}

// releaseSecrets lists helm's release records of the release.
func releaseSecrets(ctx context.Context, cp *harness.ControlPlane) ([]string, error) {
	list, err := cp.Clientset.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + release})
	if err != nil {
		return nil, fmt.Errorf("list helm's release secrets: %w", err)
	}
	var out []string
	for _, s := range list.Items {
		out = append(out, "secret/"+s.Name)
	}
	return out, nil
}

// listing prints names as kubectl get -o name does, or its empty message.
func listing(names []string) string {
	if len(names) == 0 {
		return "No resources found"
	}
	return strings.Join(names, "\n")
}
