package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// Every host reaches its own controller (issue 11; docs/architecture.md, "Targets").
// Three PROXY-protocol controllers, each fronted by its own target Service in
// hairpin-system and served by one hairpin-proxy process, and a legacy
// controller without PROXY; our CoreDNS has kubeadm's Corefile plus the bare
// line `hairpin`. A "pod" resolves each name with dig and connects with curl
// from an address of its own: a selected host arrives at its own nginx, with
// the pod's address in the PROXY header, and at no other; everything else
// gets the public answer.
func TestTargetsEveryHostReachesItsOwnController(t *testing.T) {
	ctx, s := startTargets(t)

	// What the cluster DNS answers, next to what the public DNS says.
	for _, tc := range []struct {
		name string
		host string
		want netip.Addr
		// public is true when hairpin must pass the name through: the
		// answer is then the public DNS's, which must be want.
		public bool
	}{
		{"RootIngressIsTheRootTarget", rootHost, s.root.target, false},
		{"TenantIngressIsTheTenantTarget", tenantHost, s.tenant.target, false},
		{"RouteOfTheSelectedGatewayIsTheGatewayTarget", routeHost, s.gateway.target, false},
		{"TenantIngressOutsideItsZonesIsThePublicAnswer", hijackHost, s.root.lb, true},
		{"IngressOfAClassNoTargetSelectsIsThePublicAnswer", legacyHost, s.legacy.lb, true},
		{"RouteOfAGatewayNoTargetSelectsIsThePublicAnswer", unselectedRouteHost, s.gateway.lb, true},
	} {
		t.Run("DNS/"+tc.name, func(t *testing.T) {
			if tc.public {
				wantAddrs(t, "public DNS", digA(ctx, t, s.publicDNS, tc.host), tc.want)
			}
			wantAddrs(t, "cluster DNS", digA(ctx, t, s.clusterDNS, tc.host), tc.want)
		})
	}

	// A request through each target lands at that target's nginx only.
	for _, tc := range []struct {
		name string
		host string
		ctl  *controller
	}{
		{"RootHostReachesTheRootController", rootHost, s.root},
		{"TenantHostReachesTheTenantController", tenantHost, s.tenant},
		{"RouteHostReachesTheGatewayDataPlane", routeHost, s.gateway},
	} {
		t.Run("Request/"+tc.name, func(t *testing.T) {
			ctl := tc.ctl
			client := harness.FreeLoopbackIP(t)
			addrs := digA(ctx, t, s.clusterDNS, tc.host)
			wantAddrs(t, "cluster DNS", addrs, ctl.target)
			res := curl(ctx, t, e2e.CurlRequest{Scheme: "http", Host: tc.host, IP: addrs[0], Port: 80, Source: client})
			if res.ExitCode != 0 || res.Status != "200" {
				t.Fatalf("curl: status %s, exit %d: %s", res.Status, res.ExitCode, res.Stderr)
			}
			e, err := ctl.nginx.WaitAccessLog(within(ctx, t, 5*time.Second), func(e harness.AccessLogEntry) bool {
				return e.Host == tc.host
			})
			if err != nil {
				wantUnseen(t, s, ctl, client, tc.host) // says where it went instead
				t.Fatal(err)
			}
			t.Logf("nginx-%s access log: %+v", ctl.name, e)
			for name, pair := range map[string][2]string{
				"proxy_protocol_addr":        {e.ProxyProtocolAddr, client.String()},
				"remote_addr":                {e.RemoteAddr, client.String()},
				"proxy_protocol_server_addr": {e.ProxyProtocolServerAddr, ctl.target.String()},
				"proxy_protocol_server_port": {e.ProxyProtocolServerPort, "80"},
				"status":                     {e.Status, "200"},
			} {
				if pair[0] != pair[1] {
					t.Errorf("nginx-%s $%s = %q, want %q", ctl.name, name, pair[0], pair[1])
				}
			}
			wantUnseen(t, s, ctl, client, tc.host)
		})
	}

	// The legacy controller keeps its public path: the pod connects to its
	// LoadBalancer IP directly, and it sees the pod without any header.
	t.Run("Request/ControllerWithoutProxyProtocolIsReachedDirectly", func(t *testing.T) {
		client := harness.FreeLoopbackIP(t)
		addrs := digA(ctx, t, s.clusterDNS, legacyHost)
		wantAddrs(t, "cluster DNS", addrs, s.legacy.lb)
		res := curl(ctx, t, e2e.CurlRequest{Scheme: "http", Host: legacyHost, IP: addrs[0], Port: s.legacy.port, Source: client})
		if res.ExitCode != 0 || res.Status != "200" {
			t.Fatalf("curl: status %s, exit %d: %s", res.Status, res.ExitCode, res.Stderr)
		}
		e, err := s.legacy.nginx.WaitAccessLog(within(ctx, t, 5*time.Second), func(e harness.AccessLogEntry) bool {
			return e.Host == legacyHost
		})
		if err != nil {
			t.Fatal(err)
		}
		if e.RemoteAddr != client.String() || e.ProxyProtocolAddr != "" {
			t.Errorf("nginx-legacy saw remote_addr %q, proxy_protocol_addr %q; want %s and no PROXY header", e.RemoteAddr, e.ProxyProtocolAddr, client)
		}
		wantUnseen(t, s, s.legacy, client, legacyHost)
	})

	// What the plugin says about it: one line per rejected host, and the
	// gauges of "every degraded state has a metric" (docs/architecture.md).
	for _, tc := range []struct {
		name  string
		parts []string // what the one line says
	}{
		{"HostOutsideItsTargetsZonesIsLoggedOnce", []string{hijackHost, "outside the zones"}},
		{"MalformedTargetIsLoggedOnce", []string{e2e.ProxyNamespace + "/" + brokenTarget, "disabled", e2e.ZonesAnnotation}},
	} {
		t.Run("Log/"+tc.name, func(t *testing.T) {
			var lines []string
			for _, l := range strings.Split(s.coredns.Output(), "\n") {
				if !slices.ContainsFunc(tc.parts, func(p string) bool { return !strings.Contains(l, p) }) {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 {
				t.Fatalf("%d log lines say %q, want 1:\n%s", len(lines), tc.parts, strings.Join(lines, "\n"))
			}
		})
	}
	t.Run("Metrics/TargetsHostsRejectionsAndUnselectedObjects", func(t *testing.T) {
		unselected := unselectedObjects(ctx, t, s)
		want := []wantMetric{
			{"coredns_hairpin_targets", map[string]string{"state": "serving"}, 3},
			{"coredns_hairpin_targets", map[string]string{"state": "disabled"}, 1},
			{"coredns_hairpin_targets", map[string]string{"state": "no_addresses"}, 0},
			{"coredns_hairpin_target_hosts", map[string]string{"target": e2e.ProxyNamespace + "/" + s.root.name}, 1},
			{"coredns_hairpin_target_hosts", map[string]string{"target": e2e.ProxyNamespace + "/" + s.tenant.name}, 1},
			{"coredns_hairpin_target_hosts", map[string]string{"target": e2e.ProxyNamespace + "/" + s.gateway.name}, 1},
			{"coredns_hairpin_hosts_rejected", map[string]string{"reason": "outside_zones"}, 1},
			{"coredns_hairpin_unselected_objects", map[string]string{"kind": "ingress"}, unselected["ingress"]},
			{"coredns_hairpin_unselected_objects", map[string]string{"kind": "gateway"}, unselected["gateway"]},
			{"coredns_hairpin_unselected_objects", map[string]string{"kind": "httproute"}, unselected["httproute"]},
			{"coredns_hairpin_conflicts", map[string]string{"kind": "object"}, 0},
			{"coredns_hairpin_conflicts", map[string]string{"kind": "host"}, 0},
		}
		if err := harness.Poll(within(ctx, t, 5*time.Second), metricsProbe(s.metricsURL, want)); err != nil {
			t.Fatal(err)
		}
	})

	// Last, as it changes the picture: uninstalling a target makes its
	// hosts pass through to the public answer, with no reload.
	t.Run("Live/DeletedTargetsHostsPassThrough", func(t *testing.T) {
		if err := s.cp.Clientset.CoreV1().Services(e2e.ProxyNamespace).Delete(ctx, s.tenant.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := harness.PollEvery(within(ctx, t, 5*time.Second), pollInterval, harness.AProbe(s.uncached, tenantHost, s.tenant.lb)); err != nil {
			t.Fatal(err)
		}
		wantAddrs(t, "cluster DNS, the root host", digA(ctx, t, s.uncached, rootHost), s.root.target)
		if err := harness.Poll(within(ctx, t, 5*time.Second), metricsProbe(s.metricsURL, []wantMetric{
			{"coredns_hairpin_targets", map[string]string{"state": "serving"}, 2},
		})); err != nil {
			t.Fatal(err)
		}
	})
}

// wantMetric is one expected gauge value, summed over the series whose
// labels include labels.
type wantMetric struct {
	name   string
	labels map[string]string
	value  float64
}

// metricsProbe is ready when every metric at url has its wanted value.
func metricsProbe(url string, want []wantMetric) harness.Probe {
	return func(ctx context.Context) error {
		samples, err := harness.ScrapeMetrics(ctx, url)
		if err != nil {
			return err
		}
		var wrong []string
		for _, w := range want {
			if got, found := harness.MetricValue(samples, w.name, w.labels); !found || got != w.value {
				wrong = append(wrong, fmt.Sprintf("%s%v = %v (found %v), want %v", w.name, w.labels, got, found, w.value))
			}
		}
		if len(wrong) > 0 {
			return errors.New(strings.Join(wrong, "; "))
		}
		return nil
	}
}

// unselectedObjects counts the objects in the control plane that name hosts
// and that no target of the picture selects, by the plugin's kind: the
// package's tests share one control plane, so other tests' objects count
// too. A route counts once per Gateway it attaches to.
func unselectedObjects(ctx context.Context, t *testing.T, s *targetsStack) map[string]float64 {
	t.Helper()
	n := map[string]float64{}
	ings, err := s.cp.Clientset.NetworkingV1().Ingresses("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ing := range ings.Items {
		if c := ing.Spec.IngressClassName; c == nil || (*c != s.root.name && *c != s.tenant.name) {
			n["ingress"]++
		}
	}
	gc, err := gwclient.NewForConfig(s.cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	selected := gatewayNamespace + "/public"
	gws, err := gc.GatewayV1().Gateways("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gws.Items {
		named := slices.ContainsFunc(g.Spec.Listeners, func(l gw.Listener) bool { return l.Hostname != nil })
		if named && g.Namespace+"/"+g.Name != selected {
			n["gateway"]++
		}
	}
	routes, err := gc.GatewayV1().HTTPRoutes("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes.Items {
		for _, p := range r.Spec.ParentRefs {
			ns := r.Namespace
			if p.Namespace != nil {
				ns = string(*p.Namespace)
			}
			if len(r.Spec.Hostnames) > 0 && ns+"/"+string(p.Name) != selected {
				n["httproute"]++
			}
		}
	}
	return n
}

// wantUnseen fails t if any controller but got logged a request from client
// or for host.
func wantUnseen(t *testing.T, s *targetsStack, got *controller, client netip.Addr, host string) {
	t.Helper()
	for _, c := range s.controllers() {
		if c == got {
			continue
		}
		entries, err := c.nginx.AccessLog()
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(entries, func(e harness.AccessLogEntry) bool {
			return e.ProxyProtocolAddr == client.String() || e.RemoteAddr == client.String() || e.Host == host
		}); i >= 0 {
			t.Errorf("nginx-%s also logged the request from %s for %s: %+v", c.name, client, host, entries[i])
		}
	}
}
