package e2e_test

import (
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/e2e"
)

// Without the hairpin plugin, the cluster's CoreDNS forwards the public name
// to the public DNS, which answers the load balancer's IP. The connection
// goes straight to nginx (as kube-proxy/Cilium short-circuit it in a
// cluster), without the PROXY header the load balancer would have added, and
// nginx, which requires one, drops it.
func TestWithoutHairpinNginxRefusesTheLoadBalancerPath(t *testing.T) {
	ctx, s := startStack(t)

	addrs := digA(ctx, t, s.StockDNS, "app.example.com")
	wantAddrs(t, "stock CoreDNS answer for app.example.com", addrs, s.LoadBalancerIP)

	for _, tc := range []struct {
		scheme string
		port   int
	}{{"http", s.HTTPPort}, {"https", s.HTTPSPort}} {
		t.Run(tc.scheme+"RequestFails", func(t *testing.T) {
			res := curl(ctx, t, e2e.CurlRequest{Scheme: tc.scheme, Host: "app.example.com", IP: addrs[0], Port: tc.port, CACert: s.Nginx.Cert.CertFile})
			if res.ExitCode == 0 || res.Status != "000" {
				t.Fatalf("curl succeeded (status %s) although nginx requires a PROXY header", res.Status)
			}
		})
	}

	t.Run("NginxLogsBrokenHeader", func(t *testing.T) {
		if err := s.Nginx.WaitErrorLog(within(ctx, t, 5*time.Second), "broken header"); err != nil {
			t.Fatal(err)
		}
		entries, err := s.Nginx.AccessLog()
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 0 {
			t.Fatalf("nginx served %d requests without a PROXY header: %+v", len(entries), entries)
		}
	})
}
