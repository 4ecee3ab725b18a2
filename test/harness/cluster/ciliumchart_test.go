package cluster

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	kubeversion "k8s.io/apimachinery/pkg/version"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	kubectlhairpin "github.com/coredns-hairpin/hairpin/plugin/kubectl-hairpin"
)

// defaultCiliumInstall is the chart rendered as the default cilium mode
// renders it.
func defaultCiliumInstall(t *testing.T) *ciliumInstall {
	t.Helper()
	helm, chart := ciliumChart(t)
	in, err := renderCiliumChart(t.Context(), helm, chart, ciliumModeShape, DefaultCiliumValues())
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestCiliumRecordsAreCozystacks: the harness records Cilium in
// Cozystack's namespace with the image references Cozystack's chart
// renders, the operator's Deployment paused so that it never gets a Pod.
func TestCiliumRecordsAreCozystacks(t *testing.T) {
	in := defaultCiliumInstall(t)
	r := in.records()
	for _, tc := range []struct{ what, namespace, image, want string }{
		{"cilium-config", r.config.Namespace, "", ""},
		{"the cilium DaemonSet", r.daemonSet.Namespace, r.daemonSet.Spec.Template.Spec.Containers[0].Image, "ghcr.io/cozystack/cozystack/cilium:v1.6.0@sha256:136a7dff"},
		{"the cilium-operator Deployment", r.operator.Namespace, r.operator.Spec.Template.Spec.Containers[0].Image, "quay.io/cilium/operator-generic:v1.19.5@sha256:be848a36"},
	} {
		if tc.namespace != CiliumNamespace {
			t.Errorf("%s is in %q; want %s", tc.what, tc.namespace, CiliumNamespace)
		}
		if !strings.HasPrefix(tc.image, tc.want) {
			t.Errorf("%s runs %q; want %s…", tc.what, tc.image, tc.want)
		}
	}
	if !r.operator.Spec.Paused || in.operator.Spec.Paused {
		t.Errorf("the operator's Deployment is rendered paused %v and recorded paused %v; want false and true", in.operator.Spec.Paused, r.operator.Spec.Paused)
	}
}

// TestCheckReadsCiliumsVersionFromTheRecords: `kubectl hairpin check`, on
// the records alone, names the Cilium that runs (v1.19.5, from the
// operator's image) and not Cozystack's tag of the agent's.
func TestCheckReadsCiliumsVersionFromTheRecords(t *testing.T) {
	r := defaultCiliumInstall(t).records()
	kube := kubefake.NewClientset(r.config, r.daemonSet, r.operator)
	kube.Discovery().(*discoveryfake.FakeDiscovery).FakedServerVersion = &kubeversion.Info{GitVersion: "v1.37.2"}
	report, err := kubectlhairpin.Run(t.Context(), kubectlhairpin.Clients{
		Kube: kube, Gateway: gwfake.NewClientset(), Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()),
	}, kubectlhairpin.Options{Version: "v0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	want := "the Service dataplane is Cilium " + CiliumVersion + " as kube-proxy replacement"
	evidence := "Deployment " + CiliumNamespace + "/cilium-operator: image " + CiliumOperatorImage
	for _, c := range report.Checks {
		if c.ID != "dataplane" {
			continue
		}
		if c.Status != kubectlhairpin.OK || !strings.HasPrefix(c.Message, want) || !strings.Contains(c.Message, evidence) {
			t.Errorf("the check's dataplane line: %s %s; want ok, starting %q and naming %q", c.Status, c.Message, want, evidence)
		}
		return
	}
	t.Errorf("the check has no dataplane line: %+v", report.Checks)
}
