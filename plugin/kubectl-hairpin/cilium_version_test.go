package kubectlhairpin

import (
	"context"
	"errors"
	"testing"

	apps "k8s.io/api/apps/v1"
	core "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeversion "k8s.io/apimachinery/pkg/version"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
)

// Image references as the charts render them: Cozystack's rebuild of the
// agent, tagged with the platform's version, and upstream's operator, as
// Cozystack's default networking variant renders Cilium's chart 1.19.5
// (cozystack/cozystack 3c780acd417f086f8f18d040d0d7020ff55d3ba3,
// packages/system/cilium: values.yaml and charts/cilium/values.yaml); the
// test cluster records the same (test/harness/cluster CiliumImage and
// CiliumOperatorImage).
const (
	cozystackAgent   = "ghcr.io/cozystack/cozystack/cilium:v1.6.0@sha256:136a7dfff4d6adcd448424c2354144160028a8e96eb6558b917fd3ee6d7b39fe"
	upstreamOperator = "quay.io/cilium/operator-generic:v1.19.5@sha256:be848a365776e07d0c5a895eda7aec928ddc52a5a1fa2f432fd7a286609e1db4"
	digestOnlyAgent  = "quay.io/cilium/cilium@sha256:4d1b2a5dbd8e3d0bb8d7d1b9b6c8e1f0a2c4d6e8f0a1b3c5d7e9f1a3b5c7d9e1"
)

// ciliumCases is how a line gives the verdict on ipMode: Proxy of each
// version Cilium may have.
const ciliumCases = "on Cilium 1.17.x and from 1.18.1 ipMode: Proxy is honoured; before 1.17, and on 1.18.0, it is ignored (1.18.0 by mistake: cilium#40913, fixed in 1.18.1 by cilium#40915)"

// ciliumInstall is what Cilium's chart leaves in namespace: the agent's
// DaemonSet running agent, cilium-config replacing kube-proxy, and, unless
// operator is "", the operator's Deployment running it.
func ciliumInstall(namespace, agent, operator string) []runtime.Object {
	out := []runtime.Object{
		daemonSet(namespace, "cilium", "cilium", "cilium-agent", agent),
		&core.ConfigMap{ObjectMeta: objectMeta(namespace, "cilium-config", nil), Data: map[string]string{"kube-proxy-replacement": "true"}},
	}
	if operator != "" {
		labels := map[string]string{"io.cilium/app": "operator", "name": "cilium-operator"}
		d := &apps.Deployment{ObjectMeta: objectMeta(namespace, "cilium-operator", labels)}
		d.Spec.Template.Spec.Containers = []core.Container{{Name: "cilium-operator", Image: operator}}
		out = append(out, d)
	}
	return out
}

// ipModeProxyNginx is ingress-nginx with use-proxy-protocol behind a load
// balancer whose ipMode is Proxy, and no target: it needs one only where
// the dataplane ignores that ipMode.
func ipModeProxyNginx() []runtime.Object {
	labels := map[string]string{"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "controller"}
	lb := service("ingress-nginx", "ingress-nginx-controller", labels, "", namedPort("http", 80, "http"))
	lb.Labels = labels
	lb.Spec.Type = core.ServiceTypeLoadBalancer
	proxy := core.LoadBalancerIPModeProxy
	lb.Status.LoadBalancer.Ingress = []core.LoadBalancerIngress{{IP: "203.0.113.10", IPMode: &proxy}}
	return []runtime.Object{
		&core.ConfigMap{ObjectMeta: objectMeta("ingress-nginx", "ingress-nginx-controller", labels), Data: map[string]string{"use-proxy-protocol": "true"}},
		deployment("ingress-nginx", "ingress-nginx-controller", labels, "/nginx-ingress-controller",
			"--publish-service=$(POD_NAMESPACE)/ingress-nginx-controller", "--configmap=$(POD_NAMESPACE)/ingress-nginx-controller"),
		lb,
	}
}

// fakeRun judges objects served by client-go's fake clientset, with the
// lists of the resources in denied forbidden.
func fakeRun(t *testing.T, objects []runtime.Object, denied ...string) Report {
	t.Helper()
	kube := kubefake.NewClientset(objects...)
	kube.Discovery().(*discoveryfake.FakeDiscovery).FakedServerVersion = &kubeversion.Info{GitVersion: "v1.33.1"}
	for _, resource := range denied {
		kube.PrependReactor("list", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: resource}, "", errors.New("denied by the test"))
		})
	}
	c := Clients{Kube: kube, Gateway: gwfake.NewClientset(), Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Metrics: &fakeMetrics{}}
	r, err := Run(context.Background(), c, Options{Version: "v0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// lineOf is the status and message of the first check of id, as the table
// prints them.
func lineOf(t *testing.T, r Report, id string) (Status, string) {
	t.Helper()
	for _, c := range r.Checks {
		if c.ID == id {
			return c.Status, c.Message
		}
	}
	t.Fatalf("no %s line in:\n%s", id, table(t, r))
	return "", ""
}

// TestGoldenCiliumVersion: Cilium's version is read only from an image
// that Cilium built (or a mirror that keeps its tags): the agent's, else
// the operator's. A distribution's tag is not Cilium's version; where no
// image names it, the line says so and gives the verdict of each case,
// and a load balancer with ipMode: Proxy is not failed for it.
func TestGoldenCiliumVersion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		denied  []string // resources whose list is forbidden
		// status and message of the dataplane line, and the status of the
		// ingress class line, which fails only where ipMode: Proxy is
		// known to be ignored.
		status  Status
		want    string
		classes Status
	}{
		{
			name: "CozystackAgentReadsTheOperator", objects: ciliumInstall("cozy-cilium", cozystackAgent, upstreamOperator),
			status: OK, classes: OK,
			want: `the Service dataplane is Cilium v1.19.5 as kube-proxy replacement (ConfigMap cozy-cilium/cilium-config: kube-proxy-replacement: "true"; DaemonSet cozy-cilium/cilium: image ` + cozystackAgent + `, which is not Cilium's own build; Deployment cozy-cilium/cilium-operator: image ` + upstreamOperator + `): it short-circuits LoadBalancer IPs and externalIPs, but not those with ipMode: Proxy`,
		},
		{
			name: "CozystackAgentWithoutOperatorIsUnknown", objects: ciliumInstall("cozy-cilium", cozystackAgent, ""),
			status: Warn, classes: OK,
			want: `the Service dataplane is Cilium of an unknown version as kube-proxy replacement (ConfigMap cozy-cilium/cilium-config: kube-proxy-replacement: "true"): it short-circuits LoadBalancer IPs and externalIPs; Cilium's version is unknown (the agent image ` + cozystackAgent + ` is not Cilium's own build, and no cilium-operator Deployment was found in cozy-cilium): ` + ciliumCases + `; so whether ingress-nginx/ingress-nginx-controller 203.0.113.10 is short-circuited is unknown too (taken not to be)`,
		},
		{
			name: "UpstreamAgent", objects: ciliumInstall("kube-system", "quay.io/cilium/cilium:v1.19.5", ""),
			status: OK, classes: OK,
			want: `the Service dataplane is Cilium v1.19.5 as kube-proxy replacement (ConfigMap kube-system/cilium-config: kube-proxy-replacement: "true"; DaemonSet kube-system/cilium: image quay.io/cilium/cilium:v1.19.5): it short-circuits LoadBalancer IPs and externalIPs, but not those with ipMode: Proxy`,
		},
		{
			name: "DigestOnlyAgentIsUnknown", objects: ciliumInstall("kube-system", digestOnlyAgent, ""),
			status: Warn, classes: OK,
			want: `the Service dataplane is Cilium of an unknown version as kube-proxy replacement (ConfigMap kube-system/cilium-config: kube-proxy-replacement: "true"): it short-circuits LoadBalancer IPs and externalIPs; Cilium's version is unknown (the agent image ` + digestOnlyAgent + ` has no version tag, and no cilium-operator Deployment was found in kube-system): ` + ciliumCases + `; so whether ingress-nginx/ingress-nginx-controller 203.0.113.10 is short-circuited is unknown too (taken not to be)`,
		},
		{
			name: "RancherMirror", objects: ciliumInstall("kube-system", "rancher/mirrored-cilium-cilium:v1.18.1", ""),
			status: OK, classes: OK,
			want: `the Service dataplane is Cilium v1.18.1 as kube-proxy replacement (ConfigMap kube-system/cilium-config: kube-proxy-replacement: "true"; DaemonSet kube-system/cilium: image rancher/mirrored-cilium-cilium:v1.18.1): it short-circuits LoadBalancer IPs and externalIPs, but not those with ipMode: Proxy`,
		},
		{
			name: "Cilium1.18.0IgnoresIPModeByMistake", objects: ciliumInstall("kube-system", "quay.io/cilium/cilium:v1.18.0", ""),
			status: Warn, classes: Fail,
			want: `the Service dataplane is Cilium v1.18.0 as kube-proxy replacement (ConfigMap kube-system/cilium-config: kube-proxy-replacement: "true"; DaemonSet kube-system/cilium: image quay.io/cilium/cilium:v1.18.0): it short-circuits LoadBalancer IPs and externalIPs, and ipMode: Proxy does not help: Cilium v1.18.0 ignores it by mistake: cilium#40913, fixed in 1.18.1 by cilium#40915; so ingress-nginx/ingress-nginx-controller 203.0.113.10 is short-circuited all the same`,
		},
		{
			name: "Cilium1.16IgnoresIPMode", objects: ciliumInstall("kube-system", "quay.io/cilium/cilium:v1.16.9", ""),
			status: Warn, classes: Fail,
			want: `the Service dataplane is Cilium v1.16.9 as kube-proxy replacement (ConfigMap kube-system/cilium-config: kube-proxy-replacement: "true"; DaemonSet kube-system/cilium: image quay.io/cilium/cilium:v1.16.9): it short-circuits LoadBalancer IPs and externalIPs, and ipMode: Proxy does not help: Cilium v1.16.9 ignores it (Cilium reads ipMode from 1.17); so ingress-nginx/ingress-nginx-controller 203.0.113.10 is short-circuited all the same`,
		},
		{
			name: "CozystackWithoutDaemonSetsReadsItsConfig", objects: ciliumInstall("cozy-cilium", cozystackAgent, upstreamOperator), denied: []string{"daemonsets"},
			status: OK, classes: OK,
			want: `the Service dataplane is Cilium v1.19.5 as kube-proxy replacement (ConfigMap cozy-cilium/cilium-config: kube-proxy-replacement: "true"; Deployment cozy-cilium/cilium-operator: image ` + upstreamOperator + `): it short-circuits LoadBalancer IPs and externalIPs, but not those with ipMode: Proxy`,
		},
		{
			name: "CozystackWithoutWorkloadsIsUnknown", objects: ciliumInstall("cozy-cilium", cozystackAgent, upstreamOperator), denied: []string{"daemonsets", "deployments"},
			status: Warn, classes: OK,
			want: `the Service dataplane is Cilium of an unknown version as kube-proxy replacement (ConfigMap cozy-cilium/cilium-config: kube-proxy-replacement: "true"): it short-circuits LoadBalancer IPs and externalIPs; DaemonSets and Deployments could not be listed, so Cilium's version is unknown: ` + ciliumCases + `; so whether ingress-nginx/ingress-nginx-controller 203.0.113.10 is short-circuited is unknown too (taken not to be)`,
		},
		{
			name: "DaemonSetsDeniedWithoutCiliumConfigAssumesKubeProxy", objects: []runtime.Object{daemonSet("cilium", "cilium", "cilium", "cilium-agent", "quay.io/cilium/cilium:v1.19.5")}, denied: []string{"daemonsets"},
			status: Warn, classes: OK,
			want: `the Service dataplane is kube-proxy v1.33.1 (no kube-proxy DaemonSet: the apiserver's version v1.33.1): it short-circuits LoadBalancer IPs and externalIPs; DaemonSets could not be listed and no cilium-config could be read in kube-system or cozy-cilium, so whether Cilium replaces kube-proxy is unknown: kube-proxy is assumed, of the apiserver's version`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fakeRun(t, append(ipModeProxyNginx(), tc.objects...), tc.denied...)
			if status, got := lineOf(t, r, idDataplane); status != tc.status || got != tc.want {
				t.Errorf("dataplane line:\n%s %s\nwant:\n%s %s", status, got, tc.status, tc.want)
			}
			if status, got := lineOf(t, r, idIngressClassTarget); status != tc.classes {
				t.Errorf("ingress class line: %s %s; want %s", status, got, tc.classes)
			}
		})
	}
}

// TestCiliumImageVersion: a tag is Cilium's version only on Cilium's own
// repositories (cilium/<image> on any registry) and Rancher's mirrors of
// them; a distribution's build, a digest alone or a tag that is no
// version name none, and a malformed reference is no panic.
func TestCiliumImageVersion(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  string // "" when it names no version
	}{
		{"quay.io/cilium/cilium:v1.19.5", "1.19.5"},
		{"quay.io/cilium/cilium:v1.19.5@sha256:4d1b", "1.19.5"},
		{"docker.io/cilium/cilium:v1.17.4", "1.17.4"},
		{"cilium/cilium:v1.17.4", "1.17.4"},
		{"mirror.gcr.io/cilium/cilium:v1.18.1", "1.18.1"},
		{"localhost:5000/cilium/cilium:1.18.1", "1.18.1"},
		{upstreamOperator, "1.19.5"},
		{"quay.io/cilium/operator-aws:v1.18.2", "1.18.2"},
		{"quay.io/cilium/operator-azure:v1.18.2", "1.18.2"},
		{"quay.io/cilium/operator-alibabacloud:v1.18.2", "1.18.2"},
		{"quay.io/cilium/operator:v1.16.9", "1.16.9"},
		{"rancher/mirrored-cilium-cilium:v1.18.1", "1.18.1"},
		{"registry.rancher.com/rancher/mirrored-cilium-operator-generic:v1.18.1", "1.18.1"},
		{cozystackAgent, ""},
		{"ghcr.io/cozystack/cozystack/cilium:v1.6.0", ""},
		{digestOnlyAgent, ""},
		{"quay.io/cilium/cilium:latest", ""},
		{"quay.io/cilium/hubble-relay:v1.19.5", ""},
		{"rancher/mirrored-coredns-coredns:1.12.0", ""},
		{"registry.k8s.io/kube-proxy:v1.31.2", ""},
		{"cilium:v1.19.5", ""},
		{"", ""},
		{"/:@", ""},
	} {
		t.Run(tc.image, func(t *testing.T) {
			v, why := ciliumImageVersion(tc.image)
			switch {
			case tc.want == "" && (v != nil || why == ""):
				t.Errorf("ciliumImageVersion(%q) = %v, %q; want no version, and why", tc.image, v, why)
			case tc.want != "" && (v == nil || v.String() != tc.want):
				t.Errorf("ciliumImageVersion(%q) = %v, %q; want %s", tc.image, v, why, tc.want)
			}
		})
	}
}
