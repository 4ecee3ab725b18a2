package hairpin

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	"github.com/prometheus/client_golang/prometheus/testutil"
	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A target waits for a ready endpoint only while the plugin can read the
// EndpointSlices: RBAC without them (a chart older than the image) must
// not leave every host unanswered.
func TestTargetsWaitForEndpointsOnlyWhenSlicesList(t *testing.T) {
	cases := []struct {
		name        string
		forbidden   bool
		wantAnswer  string
		wantWaiting float64
	}{
		{"slices listed, none ready: the target waits", false, "", 1},
		{"slices forbidden: the target serves at startup_timeout", true, "127.77.0.10", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := targetService("root", "127.77.0.10", "example.com", "*")
			svc.Spec.Ports = []core.ServicePort{{Name: "http", Port: 80}}
			client := fake.NewClientset(svc, ingress("default", "app", "", "app.example.com"))
			if tc.forbidden {
				client.PrependReactor("list", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(discovery.Resource("endpointslices"), "", errors.New("no RBAC for EndpointSlices"))
				})
			}
			hc := discoveryCacheOf(t, client, 300*time.Millisecond)
			wantTarget(t, hc, "app.example.com.", tc.wantAnswer)
			if got := testutil.ToFloat64(targetsKnown.WithLabelValues(hc.id, rules.StateWaiting)); got != tc.wantWaiting {
				t.Errorf("targets{state=waiting} = %v, want %v", got, tc.wantWaiting)
			}
		})
	}
}

// slimSlice keeps a slice's port names only while one of its endpoints is
// ready, with an unset condition read as ready.
func TestSlimSliceKeepsReadyPorts(t *testing.T) {
	name := func(s string) *string { return &s }
	ready := func(b *bool) discovery.Endpoint {
		return discovery.Endpoint{Addresses: []string{"198.18.0.1"}, Conditions: discovery.EndpointConditions{Ready: b}}
	}
	yes, no := true, false
	ports := []discovery.EndpointPort{{Name: name("http")}, {Name: name("https")}}
	cases := []struct {
		name      string
		endpoints []discovery.Endpoint
		ports     []discovery.EndpointPort
		want      []string
	}{
		{"ready", []discovery.Endpoint{ready(&yes)}, ports, []string{"http", "https"}},
		{"unset is ready", []discovery.Endpoint{ready(nil)}, ports, []string{"http", "https"}},
		{"one of two ready", []discovery.Endpoint{ready(&no), ready(&yes)}, ports, []string{"http", "https"}},
		{"not ready", []discovery.Endpoint{ready(&no)}, ports, nil},
		{"no endpoints", nil, ports, nil},
		{"ready without ports", []discovery.Endpoint{ready(&yes)}, nil, []string{}},
		{"unnamed port", []discovery.Endpoint{ready(&yes)}, []discovery.EndpointPort{{}}, []string{""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &discovery.EndpointSlice{Endpoints: tc.endpoints, Ports: tc.ports}
			s.Namespace, s.Name = "ns", "svc-abc"
			s.Labels = map[string]string{discovery.LabelServiceName: "svc"}
			obj, err := slimSlice(s)
			if err != nil {
				t.Fatal(err)
			}
			c := obj.(*cachedSlice)
			if c.service != "svc" || c.key() != "ns/svc-abc" {
				t.Errorf("service %q key %q, want svc and ns/svc-abc", c.service, c.key())
			}
			if (c.readyPorts == nil) != (tc.want == nil) || !slices.Equal(c.readyPorts, tc.want) {
				t.Errorf("ready ports %#v, want %#v", c.readyPorts, tc.want)
			}
		})
	}
}

// A waiting target that becomes a direct one stops waiting: its answer is
// another Service, behind no proxy of ours.
func TestWaitingTargetMadeDirectServes(t *testing.T) {
	svc := targetService("cilium", "127.77.0.10", "example.net", "cilium")
	svc.Spec.Ports = []core.ServicePort{{Name: "http", Port: 80}}
	hc, client := discoveryCache(t, svc,
		controllerService("gateways", "cilium-gateway-public", "127.77.1.10"),
		ingress("default", "app", "cilium", "app.example.net"))
	wantTarget(t, hc, "app.example.net.", "") // no ready endpoint

	direct := directTarget("cilium", "example.net", "cilium", "gateways/cilium-gateway-public")
	if _, err := client.CoreV1().Services(defaultTargetsNamespace).Update(t.Context(), direct, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.net.", "127.77.1.10")
}
