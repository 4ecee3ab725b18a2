package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// An HTTPRoute attached to a Gateway of the watched class (`gateway_class
// cilium`) is answered like an Ingress host, and the request goes through
// the proxy to nginx, which serves any Host from its default server.
func TestGatewayAPIRouteHostnameReachesNginxThroughTheProxy(t *testing.T) {
	ctx, s := startStack(t)
	const host = "route.example.com"
	if err := e2e.CreateGatewayRoute(ctx, s.ControlPlane, "gateway", "web", host); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := waitForA(wait, s.UncachedDNS, host, s.ProxyIP, time.Now()); err != nil {
		t.Fatal(err)
	}

	addrs := digA(ctx, t, s.HairpinDNS, host)
	wantAddrs(t, "hairpin CoreDNS", addrs, s.ProxyIP)
	client := harness.FreeLoopbackIP(t)
	res := curl(ctx, t, e2e.CurlRequest{Scheme: "https", Host: host, IP: addrs[0], Port: 443, CACert: s.Nginx.Cert.CertFile, Source: client})
	if res.ExitCode != 0 || res.Status != "200" {
		t.Fatalf("curl: status %s, exit %d: %s", res.Status, res.ExitCode, res.Stderr)
	}
	e, err := s.Nginx.WaitAccessLog(within(ctx, t, 5*time.Second), func(e harness.AccessLogEntry) bool {
		return e.RemoteAddr == client.String()
	})
	if err != nil {
		t.Fatal(err)
	}
	if e.SSLServerName != host || e.Host != host || e.ProxyProtocolServerPort != "443" {
		t.Fatalf("nginx access log %+v: want ssl_server_name and host %s, proxy_protocol_server_port 443", e, host)
	}
}
