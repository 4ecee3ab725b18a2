package e2e_test

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// Every host reaches its own controller (issue 11, DESIGN.md "Targets").
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
		want func() netip.Addr
		// public is true when hairpin must pass the name through: the
		// answer is then the public DNS's, which must be want.
		public bool
	}{
		{"RootIngressIsTheRootTarget", rootHost, func() netip.Addr { return s.root.target }, false},
		{"TenantIngressIsTheTenantTarget", tenantHost, func() netip.Addr { return s.tenant.target }, false},
		{"RouteOfTheSelectedGatewayIsTheGatewayTarget", routeHost, func() netip.Addr { return s.gateway.target }, false},
		{"TenantIngressOutsideItsZonesIsThePublicAnswer", hijackHost, func() netip.Addr { return s.root.lb }, true},
		{"IngressOfAClassNoTargetSelectsIsThePublicAnswer", legacyHost, func() netip.Addr { return s.legacy.lb }, true},
		{"RouteOfAGatewayNoTargetSelectsIsThePublicAnswer", unselectedRouteHost, func() netip.Addr { return s.gateway.lb }, true},
	} {
		t.Run("DNS/"+tc.name, func(t *testing.T) {
			want := tc.want()
			if tc.public {
				wantAddrs(t, "public DNS", digA(ctx, t, s.publicDNS, tc.host), want)
			}
			wantAddrs(t, "cluster DNS", digA(ctx, t, s.clusterDNS, tc.host), want)
		})
	}

	// A request through each target lands at that target's nginx only.
	for _, tc := range []struct {
		name string
		host string
		ctl  func() *controller
	}{
		{"RootHostReachesTheRootController", rootHost, func() *controller { return s.root }},
		{"TenantHostReachesTheTenantController", tenantHost, func() *controller { return s.tenant }},
		{"RouteHostReachesTheGatewayDataPlane", routeHost, func() *controller { return s.gateway }},
	} {
		t.Run("Request/"+tc.name, func(t *testing.T) {
			ctl := tc.ctl()
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
