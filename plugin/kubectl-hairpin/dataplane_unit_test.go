package kubectlhairpin

import (
	"strings"
	"testing"

	core "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

// TestDataplaneHonoursIPMode: ipMode: Proxy spares an address only on
// kube-proxy from 1.30 and Cilium from 1.17 but 1.18.0; an unknown version
// is taken to be a current one.
func TestDataplaneHonoursIPMode(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cilium  bool
		version string
		ignores string // a piece of why; "" when it honours ipMode
	}{
		{"KubeProxyUnknownVersion", false, "", ""},
		{"KubeProxy1.29", false, "v1.29.4", "LoadBalancerIPMode feature is on by default from 1.30"},
		{"KubeProxy1.30", false, "v1.30.0", ""},
		{"KubeProxyRKE2Tag", false, "v1.31.1-rke2r1", ""},
		{"CiliumUnknownVersion", true, "", ""},
		{"Cilium1.16", true, "v1.16.9", "Cilium reads ipMode from 1.17"},
		{"Cilium1.17", true, "1.17.4", ""},
		{"Cilium1.18.0", true, "v1.18.0", "cilium#40913, fixed in 1.18.1 by cilium#40915"},
		{"Cilium1.18.1", true, "v1.18.1", ""},
		{"Cilium1.19.5", true, "v1.19.5", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Dataplane{Cilium: tc.cilium}
			if tc.version != "" {
				d.Version = version.MustParseGeneric(tc.version)
			}
			got := d.ignoresIPMode()
			if tc.ignores == "" && got != "" || tc.ignores != "" && !strings.Contains(got, tc.ignores) {
				t.Errorf("ignoresIPMode() = %q; want %q", got, tc.ignores)
			}
		})
	}
}

// TestJudgeLBsOnTheDataplane: externalIPs are short-circuited like VIPs,
// and an ipMode: Proxy that the dataplane ignores is too; the verdict
// names who short-circuits.
func TestJudgeLBsOnTheDataplane(t *testing.T) {
	proxy := core.LoadBalancerIPModeProxy
	lb := &core.Service{Spec: core.ServiceSpec{Type: core.ServiceTypeLoadBalancer}}
	lb.Namespace, lb.Name = "ns", "lb"
	lb.Status.LoadBalancer.Ingress = []core.LoadBalancerIngress{{IP: "203.0.113.1", IPMode: &proxy}}
	ext := &core.Service{Spec: core.ServiceSpec{Type: core.ServiceTypeClusterIP, ExternalIPs: []string{"203.0.113.2"}}}
	ext.Namespace, ext.Name = "ns", "ext"
	cilium := func(v string) Dataplane { return Dataplane{Cilium: true, Version: version.MustParseGeneric(v)} }
	for _, tc := range []struct {
		name   string
		d      Dataplane
		lbs    []*core.Service
		needed bool
		why    string
	}{
		{"ExternalIPsOnKubeProxy", Dataplane{}, []*core.Service{ext}, true, "kube-proxy short-circuits ns/ext 203.0.113.2 (externalIPs)"},
		{"ExternalIPsOnCilium", cilium("1.19.5"), []*core.Service{ext}, true, "Cilium (kube-proxy replacement) short-circuits ns/ext 203.0.113.2 (externalIPs)"},
		{"IPModeProxyOnCilium1.19", cilium("1.19.5"), []*core.Service{lb}, false, "nothing is short-circuited: ns/lb 203.0.113.1 (ipMode: Proxy)"},
		{"IPModeProxyOnCilium1.18.0", cilium("1.18.0"), []*core.Service{lb}, true, "Cilium (kube-proxy replacement) short-circuits ns/lb 203.0.113.1 (ipMode: Proxy, but Cilium v1.18.0 ignores it by mistake: cilium#40913"},
		{"IPModeProxyOnCilium1.16", cilium("1.16.9"), []*core.Service{lb}, true, "ipMode: Proxy, but Cilium v1.16.9 ignores it"},
		{"IPModeProxyOnCiliumOfUnknownVersion", Dataplane{Cilium: true}, []*core.Service{lb}, false, "nothing is short-circuited: ns/lb 203.0.113.1 (ipMode: Proxy, taken to be honoured: the dataplane's version is unknown)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeLBs(tc.d, tc.lbs)
			if v.needed != tc.needed || v.pending || !strings.Contains(v.why, tc.why) {
				t.Errorf("%+v; want needed %v, not pending, why containing %q", v, tc.needed, tc.why)
			}
		})
	}
	if !exposed(ext) || exposed(&core.Service{}) {
		t.Error("a ClusterIP Service is exposed by its externalIPs only")
	}
}

func TestImageTag(t *testing.T) {
	for image, want := range map[string]string{
		"quay.io/cilium/cilium:v1.19.5@sha256:4d1b": "v1.19.5",
		"registry.k8s.io/kube-proxy:v1.31.2":        "v1.31.2",
		"localhost:5000/kube-proxy":                 "",
		"localhost:5000/cilium/cilium:1.18.1":       "1.18.1",
		"cilium@sha256:4d1b":                        "",
	} {
		if got := imageTag(image); got != want {
			t.Errorf("imageTag(%q) = %q; want %q", image, got, want)
		}
	}
}
