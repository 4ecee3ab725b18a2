package kubectlhairpin

import (
	"reflect"
	"strings"
	"testing"

	core "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseMetricsSumsMatchingSeries(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(`# TYPE x gauge
x{cache="a",kind="ingress"} 1
x{cache="b",kind="ingress"} 2
x{cache="a",kind="gateway"} 0
# TYPE c counter
c_total{reason="forbidden"} 3
# TYPE h histogram
h_bucket{le="1"} 1
h_sum 1
h_count 1
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
		found  bool
	}{
		{"x", []string{"kind", "ingress"}, 3, true},
		{"x", []string{"cache", "a", "kind", "gateway"}, 0, true},
		{"x", []string{"kind", "tlsroute"}, 0, false},
		{"c_total", nil, 3, true},
		{"h", nil, 0, false}, // histograms are not read
	} {
		if got, found := m.Sum(tc.name, tc.labels...); got != tc.want || found != tc.found {
			t.Errorf("Sum(%s, %v) = %g, %v; want %g, %v", tc.name, tc.labels, got, found, tc.want, tc.found)
		}
	}
}

func TestParseMetricsRejectsGarbage(t *testing.T) {
	if _, err := ParseMetrics(strings.NewReader("<html>not metrics</html>\n")); err == nil {
		t.Fatal("an HTML page parsed as metrics")
	}
}

func TestIngressNginxFlags(t *testing.T) {
	env := []core.EnvVar{
		{Name: "POD_NAMESPACE", ValueFrom: &core.EnvVarSource{FieldRef: &core.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "CLASS", Value: "tenant-a"},
	}
	args := expandArgs([]string{"/nginx-ingress-controller", "--configmap=$(POD_NAMESPACE)/cm", "--ingress-class", "$(CLASS)", "--watch-ingress-without-class", "-v=2"}, env, "ns1")
	got := parseFlags(args)
	want := map[string]string{"configmap": "ns1/cm", "ingress-class": "tenant-a", "watch-ingress-without-class": "true"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("flags %v; want %v", got, want)
	}
}

func TestLBProxyAnnotations(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		on         bool
	}{
		{"service.beta.kubernetes.io/aws-load-balancer-proxy-protocol", "*", true},
		{"load-balancer.hetzner.cloud/uses-proxyprotocol", "true", true},
		{"load-balancer.hetzner.cloud/uses-proxyprotocol", "false", false},
		{"service.beta.kubernetes.io/do-loadbalancer-enable-proxy-protocol", "True", true},
		{"service.beta.kubernetes.io/scw-loadbalancer-proxy-protocol-v2", "80,443", true},
		{"service.beta.kubernetes.io/scw-loadbalancer-proxy-protocol-v1", "false", false},
		{"service.beta.kubernetes.io/oci-load-balancer-connection-proxy-protocol-version", "2", true},
		{"oci-network-load-balancer.oraclecloud.com/is-ppv2-enabled", "true", true},
		{"service.beta.kubernetes.io/linode-loadbalancer-default-proxy-protocol", "none", false},
		{"service.beta.kubernetes.io/linode-loadbalancer-default-proxy-protocol", "v2", true},
		{"example.com/unrelated", "true", false},
	} {
		svc := &core.Service{Spec: core.ServiceSpec{Type: core.ServiceTypeLoadBalancer}}
		svc.Annotations = map[string]string{tc.key: tc.value}
		if got := len(lbProxyReasons(svc)) > 0; got != tc.on {
			t.Errorf("%s: %q turns PROXY on: %v; want %v", tc.key, tc.value, got, tc.on)
		}
		svc.Spec.Type = core.ServiceTypeClusterIP
		if len(lbProxyReasons(svc)) > 0 {
			t.Errorf("%s on a ClusterIP Service counts", tc.key)
		}
	}
}

func TestJudgeLBs(t *testing.T) {
	proxy, vip := core.LoadBalancerIPModeProxy, core.LoadBalancerIPModeVIP
	lb := func(ingress ...core.LoadBalancerIngress) *core.Service {
		s := &core.Service{}
		s.Namespace, s.Name = "ns", "lb"
		s.Status.LoadBalancer.Ingress = ingress
		return s
	}
	// nodePort is a controller behind a load balancer outside the cluster
	// that dials its NodePorts: no address of it is the dataplane's.
	nodePort := func() *core.Service {
		s := &core.Service{}
		s.Namespace, s.Name, s.Spec.Type = "ns", "np", core.ServiceTypeNodePort
		s.Spec.Ports = []core.ServicePort{{Port: 80, NodePort: 30000}, {Port: 443, NodePort: 30001}}
		return s
	}
	for _, tc := range []struct {
		name            string
		lbs             []*core.Service
		needed, pending bool
	}{
		{"NoLoadBalancerIsAssumedNeeded", nil, true, false},
		{"IPWithoutModeIsShortCircuited", []*core.Service{lb(core.LoadBalancerIngress{IP: "203.0.113.1"})}, true, false},
		{"VIP", []*core.Service{lb(core.LoadBalancerIngress{IP: "203.0.113.1", IPMode: &vip})}, true, false},
		{"Proxy", []*core.Service{lb(core.LoadBalancerIngress{IP: "203.0.113.1", IPMode: &proxy})}, false, false},
		{"HostnameOnly", []*core.Service{lb(core.LoadBalancerIngress{Hostname: "lb.example.net"})}, false, false},
		{"HostnameAndVIPIsShortCircuited", []*core.Service{lb(core.LoadBalancerIngress{Hostname: "lb.example.net"}, core.LoadBalancerIngress{IP: "203.0.113.1"})}, true, false},
		{"OneOfTwoShortCircuited", []*core.Service{lb(core.LoadBalancerIngress{IP: "203.0.113.1", IPMode: &proxy}), lb(core.LoadBalancerIngress{IP: "203.0.113.2"})}, true, false},
		{"Pending", []*core.Service{lb()}, true, true},
		{"NodePortOnlyIsNotShortCircuited", []*core.Service{nodePort()}, false, false},
		{"NodePortAndVIPIsShortCircuited", []*core.Service{nodePort(), lb(core.LoadBalancerIngress{IP: "203.0.113.1", IPMode: &vip})}, true, false},
	} {
		v := judgeLBs(Dataplane{}, tc.lbs)
		if v.needed != tc.needed || v.pending != tc.pending || v.why == "" {
			t.Errorf("%s: %+v; want needed %v pending %v, with a reason", tc.name, v, tc.needed, tc.pending)
		}
	}
}

func TestCorefileZones(t *testing.T) {
	got, err := corefileZones("cluster.local:53 {\n forward . __PILLAR__CLUSTER__DNS__\n}\ndns://Example.COM:53 example.org {\n forward . 10.0.0.10\n}\n.:53 {\n forward . /etc/resolv.conf\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cluster.local.", "example.com.", "example.org.", "."}; !reflect.DeepEqual(got, want) {
		t.Fatalf("zones %v; want %v", got, want)
	}
	for _, tc := range []struct {
		zone string
		want bool
	}{{"example.com.", true}, {"a.example.org.", true}, {"other.org.", false}} {
		if forwarded(got, tc.zone) != tc.want {
			t.Errorf("forwarded(%s) = %v; want %v (the root block does not count)", tc.zone, !tc.want, tc.want)
		}
	}
	if _, err := corefileZones("example.com {\n"); err == nil {
		t.Error("an unclosed block parsed")
	}
}

func TestRouteOfATargetPort(t *testing.T) {
	pod := &core.Pod{Spec: core.PodSpec{Containers: []core.Container{{
		Args:  []string{"--route=:8080=up.ns.svc:80,name=web-http", "--route", ":8443=up.ns.svc:443", "--log-level=info"},
		Ports: []core.ContainerPort{{Name: "https", ContainerPort: 8443}},
	}}}}
	svc := &core.Service{}
	svc.Name = "web"
	for _, tc := range []struct {
		port           core.ServicePort
		name, upstream string
	}{
		{namedPort("http", 80, "8080"), "web-http", "up.ns.svc:80"},
		{namedPort("https", 443, "https"), ":8443", "up.ns.svc:443"}, // unnamed route: named by its listen address
		{namedPort("other", 81, "9999"), "web-other", ""},            // no route: the chart's name, no upstream
	} {
		r := routeOf(pod, svc, tc.port)
		if r.Name != tc.name || r.Upstream != tc.upstream {
			t.Errorf("port %s: route %q to %q; want %q to %q", tc.port.Name, r.Name, r.Upstream, tc.name, tc.upstream)
		}
	}
	// The proxy reads its routes from HAIRPIN_PROXY_ROUTE when no flag
	// names one, and accepts -route as --route.
	envPod := &core.Pod{Spec: core.PodSpec{Containers: []core.Container{{
		Command: []string{"/hairpin-proxy", "-log-level", "info"},
		Env:     []core.EnvVar{{Name: "HAIRPIN_PROXY_ROUTE", Value: ":8080=up.ns.svc:80,name=web-http :8443=up.ns.svc:443"}},
	}, {
		Args: []string{"-route", ":9000=other.ns.svc:90,name=web-other"},
	}}}}
	for _, tc := range []struct {
		port           core.ServicePort
		name, upstream string
	}{
		{namedPort("http", 80, "8080"), "web-http", "up.ns.svc:80"},
		{namedPort("https", 443, "8443"), ":8443", "up.ns.svc:443"},
		{namedPort("other", 90, "9000"), "web-other", "other.ns.svc:90"},
	} {
		r := routeOf(envPod, svc, tc.port)
		if r.Name != tc.name || r.Upstream != tc.upstream {
			t.Errorf("env and -route, port %s: route %q to %q; want %q to %q", tc.port.Name, r.Name, r.Upstream, tc.name, tc.upstream)
		}
	}
}

func TestEnvoyProxyProtocol(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec map[string]any
		on   bool
	}{
		{"ProxyProtocol", map[string]any{"proxyProtocol": map[string]any{}}, true},
		{"Optional", map[string]any{"proxyProtocol": map[string]any{"optional": true}}, false},
		{"Legacy", map[string]any{"enableProxyProtocol": true}, true},
		{"LegacyOff", map[string]any{"enableProxyProtocol": false}, false},
		{"Neither", map[string]any{"timeout": map[string]any{}}, false},
	} {
		p := unstructured.Unstructured{Object: map[string]any{"spec": tc.spec}}
		if _, on := envoyProxyProtocol(p); on != tc.on {
			t.Errorf("%s: requires PROXY %v; want %v", tc.name, on, tc.on)
		}
	}
}

func TestPolicyGatewaysByRefAndSelector(t *testing.T) {
	g := &gatherer{}
	labelled := gateway("tenant", "labelled", "eg", "")
	labelled.Labels = map[string]string{"proxy": "on"}
	g.cache.gateways = append(g.cache.gateways, *gateway("tenant", "gw", "eg", ""), *labelled, *gateway("other", "labelled", "eg", ""))
	p := object("gateway.envoyproxy.io/v1alpha1", "ClientTrafficPolicy", "tenant", "p", map[string]any{
		"targetRef":       map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"},
		"targetRefs":      []any{map[string]any{"kind": "HTTPRoute", "name": "r"}},
		"targetSelectors": []any{map[string]any{"kind": "Gateway", "matchLabels": map[string]any{"proxy": "on"}}},
	})
	if got, want := g.policyGateways(*p), []string{"tenant/gw", "tenant/labelled"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("gateways %v; want %v", got, want)
	}
}
