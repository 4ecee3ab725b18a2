package manifests

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// serviceCIDR is the apiserver's Service range in these tests: a realistic
// one, so that tenant mode's kube-dns clusterIP (10.96.0.10) is valid.
const serviceCIDR = "10.96.0.0/12"

// newControlPlane starts a real kube-apiserver with the Gateway API CRDs
// (standard channel) and prometheus-operator's ServiceMonitor and
// PrometheusRule CRDs, so that every object the chart can render is known.
func newControlPlane(t *testing.T) *harness.ControlPlane {
	t.Helper()
	return harness.NewControlPlane(t, harness.ControlPlaneOptions{
		GatewayAPI:     harness.GatewayStandard,
		CRDDirs:        []string{filepath.Join(repoDir(t), "test", "manifests", "testdata", "crds")},
		APIServerFlags: map[string][]string{"service-cluster-ip-range": {serviceCIDR}},
	})
}

// cli runs kubectl against a control plane.
type cli struct {
	t          *testing.T
	kubectl    string
	kubeconfig string
}

// run runs kubectl with args and stdin, failing the test on error, and
// returns stdout and stderr.
func (k cli) run(stdin []byte, args ...string) (string, string) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.kubectl, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// TestEveryRenderPassesServerSideDryRun sends every object of every render
// to a real kube-apiserver with `kubectl apply --server-side
// --dry-run=server`: its schema validation, defaulting and admission
// (Pod Security included, with the release namespace labelled as the chart
// labels it) accept them all.
func TestEveryRenderPassesServerSideDryRun(t *testing.T) {
	renders := renderAll(t)
	cp := newControlPlane(t)
	k := cli{t: t, kubectl: kubectl(t), kubeconfig: cp.Kubeconfig}
	// The namespace the objects go to, with the Pod Security labels the
	// rendered Namespace carries, so that admission warns as it would.
	k.run([]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+releaseNamespace+`","labels":{`+
		`"pod-security.kubernetes.io/enforce":"restricted","pod-security.kubernetes.io/warn":"restricted"}}}`), "apply", "-f", "-")
	// The other namespaces the renders put objects in (a direct target's
	// Role goes to its Service's namespace), as the cluster has them.
	namespaces := map[string]bool{releaseNamespace: true}
	for _, r := range renders {
		for _, o := range r.objs {
			if m, err := meta.Accessor(o); err == nil && m.GetNamespace() != "" && !namespaces[m.GetNamespace()] {
				namespaces[m.GetNamespace()] = true
				k.run([]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+m.GetNamespace()+`"}}`), "apply", "-f", "-")
			}
		}
	}
	for _, r := range renders {
		t.Run(r.name, func(t *testing.T) {
			k := cli{t: t, kubectl: k.kubectl, kubeconfig: k.kubeconfig}
			_, stderr := k.run(r.yaml, "apply", "--server-side", "--dry-run=server", "--field-manager=coredns-hairpin", "-f", "-")
			if strings.Contains(stderr, "PodSecurity") || strings.Contains(stderr, "Warning") {
				t.Errorf("the apiserver warns:\n%s", stderr)
			}
		})
	}
}

// TestHelmInstallPutsObjectsInPlace installs the chart with real helm into
// a real apiserver (defaults with zones, then upgraded to the gateway-api
// example with monitoring), checks that every rendered object exists as
// rendered, and that `helm uninstall` removes every one of them.
func TestHelmInstallPutsObjectsInPlace(t *testing.T) {
	cp := newControlPlane(t)
	h := harness.RequireHelm(t).WithKubeconfig(cp.Kubeconfig)
	dyn := newDynamic(t, cp)

	install := valuesCase{name: "defaults", set: []string{defaultZones}}
	upgrade := valuesCase{name: "gateway-api with monitoring",
		values: []string{filepath.Join(chartDir(t), "examples", "gateway-api.yaml")},
		set:    []string{`serviceMonitor.enabled=true`, `prometheusRule.enabled=true`}}

	var previous []apiruntime.Object
	for i, c := range []valuesCase{install, upgrade} {
		verb := []string{"install", "--create-namespace"}
		if i > 0 {
			verb = []string{"upgrade"}
		}
		h.MustRun(t, append(append(verb, releaseName, chartDir(t), "--namespace", releaseNamespace), c.args()...)...)
		y, err := helmTemplate(t, h, c)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decode(y)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			got := dyn.get(t, o)
			if got == nil {
				t.Errorf("%s: after helm %s, %s is missing", c.name, verb[0], kindOf(o))
				continue
			}
			if owner := got.GetAnnotations()["meta.helm.sh/release-name"]; owner != releaseName {
				t.Errorf("%s: %s is not owned by the release (meta.helm.sh/release-name %q)", c.name, kindOf(o), owner)
			}
			checkSpecApplied(t, o, got)
		}
		// An upgrade removes what the new values no longer render.
		for _, o := range previous {
			if !containsObject(objs, o) && dyn.get(t, o) != nil {
				t.Errorf("%s: %s survived the upgrade that no longer renders it", c.name, kindOf(o))
			}
		}
		previous = objs
	}

	h.MustRun(t, "uninstall", releaseName, "--namespace", releaseNamespace, "--wait", "--timeout", "60s")
	for _, o := range previous {
		if dyn.get(t, o) != nil {
			t.Errorf("after helm uninstall, %s is still there", kindOf(o))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svcs, err := cp.Clientset.CoreV1().Services(releaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: targetLabel})
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs.Items) > 0 {
		t.Errorf("after helm uninstall, target Services remain: %v", svcs.Items)
	}
}

// checkSpecApplied compares the rendered object's top-level data with what
// the apiserver stored, for the kinds where the chart sets it verbatim
// (labels and annotations of every object; the target annotations matter
// most).
func checkSpecApplied(t *testing.T, want apiruntime.Object, got *unstructured.Unstructured) {
	t.Helper()
	m, _ := meta.Accessor(want)
	for k, v := range m.GetLabels() {
		if got.GetLabels()[k] != v {
			t.Errorf("%s: label %s=%q; rendered %q", kindOf(want), k, got.GetLabels()[k], v)
		}
	}
	for k, v := range m.GetAnnotations() {
		if got.GetAnnotations()[k] != v {
			t.Errorf("%s: annotation %s=%q; rendered %q", kindOf(want), k, got.GetAnnotations()[k], v)
		}
	}
	if svc, ok := want.(*corev1.Service); ok {
		ports, _, _ := unstructured.NestedSlice(got.Object, "spec", "ports")
		if len(ports) != len(svc.Spec.Ports) {
			t.Errorf("%s: %d ports stored; rendered %d", kindOf(want), len(ports), len(svc.Spec.Ports))
		}
	}
}

func containsObject(objs []apiruntime.Object, o apiruntime.Object) bool {
	for _, x := range objs {
		if kindOf(x) == kindOf(o) {
			return true
		}
	}
	return false
}

// dynamicClient reads any rendered object back from the apiserver.
type dynamicClient struct {
	client dynamic.Interface
	mapper meta.RESTMapper
}

func newDynamic(t *testing.T, cp *harness.ControlPlane) *dynamicClient {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	client, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &dynamicClient{client: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// get returns the stored object o names, or nil when it does not exist.
func (d *dynamicClient) get(t *testing.T, o apiruntime.Object) *unstructured.Unstructured {
	t.Helper()
	u := toUnstructured(t, o)
	gvk := u.GroupVersionKind()
	mapping, err := d.mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
	if err != nil {
		t.Fatalf("%s: %v", kindOf(o), err)
	}
	ri := d.client.Resource(mapping.Resource)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got *unstructured.Unstructured
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		got, err = ri.Namespace(u.GetNamespace()).Get(ctx, u.GetName(), metav1.GetOptions{})
	} else {
		got, err = ri.Get(ctx, u.GetName(), metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get %s: %v", kindOf(o), err)
	}
	if got.GetDeletionTimestamp() != nil {
		return nil // being deleted (a Namespace finalizing)
	}
	return got
}

// toUnstructured converts a decoded object, keeping its apiVersion and kind.
func toUnstructured(t *testing.T, o apiruntime.Object) *unstructured.Unstructured {
	t.Helper()
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u
	}
	b, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatal(err)
	}
	if u.GetKind() == "" {
		t.Fatalf("%s: decoded without apiVersion/kind", kindOf(o))
	}
	return u
}
