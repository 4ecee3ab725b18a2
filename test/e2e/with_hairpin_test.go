package e2e_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// With the one hairpin stanza added, the Ingress host resolves to the proxy
// Service's ClusterIP, the proxy adds the PROXY header with the client's real
// address, and nginx serves the request as if it had come through the load
// balancer.
func TestWithHairpinIngressHostReachesNginxThroughTheProxy(t *testing.T) {
	ctx, s := startStack(t)
	createIngressAndWait(ctx, t, s, "app", "app", "app.example.com")

	t.Run("DigReturnsTheProxyClusterIP", func(t *testing.T) {
		wantAddrs(t, "hairpin CoreDNS", digA(ctx, t, s.HairpinDNS, "app.example.com"), s.ProxyIP)
		wantAddrs(t, "stock CoreDNS", digA(ctx, t, s.StockDNS, "app.example.com"), s.LoadBalancerIP)
	})

	for _, tc := range []struct {
		scheme string
		port   int
	}{{"http", 80}, {"https", 443}} {
		t.Run(tc.scheme+"ReachesNginxWithTheRealClientAddress", func(t *testing.T) {
			// The client connects from an address of its own, so that the
			// access log can only show it if the proxy passed it on.
			client := harness.FreeLoopbackIP(t)
			addrs := digA(ctx, t, s.HairpinDNS, "app.example.com")
			wantAddrs(t, "hairpin CoreDNS", addrs, s.ProxyIP)
			res := curl(ctx, t, e2e.CurlRequest{Scheme: tc.scheme, Host: "app.example.com", IP: addrs[0], Port: tc.port, CACert: s.Nginx.Cert.CertFile, Source: client})
			if res.ExitCode != 0 || res.Status != "200" {
				t.Fatalf("curl: status %s, exit %d: %s", res.Status, res.ExitCode, res.Stderr)
			}
			e, err := s.Nginx.WaitAccessLog(within(ctx, t, 5*time.Second), func(e harness.AccessLogEntry) bool {
				return e.ProxyProtocolAddr == client.String() && e.Scheme == tc.scheme
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("nginx access log: %+v", e)
			want := map[string][2]string{
				"remote_addr":                {e.RemoteAddr, client.String()},
				"proxy_protocol_server_addr": {e.ProxyProtocolServerAddr, s.ProxyIP.String()},
				"proxy_protocol_server_port": {e.ProxyProtocolServerPort, strconv.Itoa(tc.port)},
				"host":                       {e.Host, "app.example.com"},
				"status":                     {e.Status, "200"},
			}
			if tc.scheme == "https" {
				want["ssl_server_name"] = [2]string{e.SSLServerName, "app.example.com"}
			}
			for name, pair := range want {
				if pair[0] != pair[1] {
					t.Errorf("nginx $%s = %q, want %q", name, pair[0], pair[1])
				}
			}
			// The TCP peer nginx saw is the proxy, not the client.
			if e.RealIPRemoteAddr == client.String() {
				t.Errorf("nginx $realip_remote_addr = %s: the client connected to nginx directly", e.RealIPRemoteAddr)
			}
		})
	}

	// What else the hairpin CoreDNS answers, next to the stock one's answer.
	soa := func(zone string) func(*testing.T, *dns.Msg) {
		return func(t *testing.T, r *dns.Msg) {
			t.Helper()
			if len(r.Ns) == 0 || r.Ns[0].Header().Rrtype != dns.TypeSOA || r.Ns[0].Header().Name != zone {
				t.Errorf("authority %v, want the SOA of %s", r.Ns, zone)
			}
		}
	}
	for _, tc := range []struct {
		name      string
		server    string
		qname     string
		qtype     uint16
		rcode     int
		answers   []string // the answers' data, in order
		authority func(*testing.T, *dns.Msg)
	}{
		{"AAAAIsNODATA", s.HairpinDNS, "app.example.com", dns.TypeAAAA, dns.RcodeSuccess, nil, soa("example.com.")},
		{"AAAAWithoutHairpinIsThePublicOne", s.StockDNS, "app.example.com", dns.TypeAAAA, dns.RcodeSuccess, []string{e2e.PublicAAAA}, nil},
		{"HTTPSRecordIsNODATA", s.HairpinDNS, "app.example.com", dns.TypeHTTPS, dns.RcodeSuccess, nil, soa("example.com.")},
		{"HTTPSRecordWithoutHairpinHasTheLoadBalancerHint", s.StockDNS, "app.example.com", dns.TypeHTTPS, dns.RcodeSuccess,
			[]string{`1 . alpn="h2,http/1.1" ipv4hint="` + s.LoadBalancerIP.String() + `"`}, nil},
		{"NameWithoutIngressComesFromPublicDNS", s.HairpinDNS, "other.example.com", dns.TypeA, dns.RcodeSuccess, []string{s.LoadBalancerIP.String()}, nil},
		{"SearchPathExpansionIsNXDOMAINFromKubernetes", s.HairpinDNS, "app.example.com.default.svc.cluster.local", dns.TypeA, dns.RcodeNameError, nil, soa("cluster.local.")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := harness.Exchange(within(ctx, t, 5*time.Second), tc.server, tc.qname, tc.qtype)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, rr := range r.Answer {
				got = append(got, rrData(rr))
			}
			if r.Rcode != tc.rcode || !slices.Equal(got, tc.answers) {
				t.Fatalf("%s %s at %s: %s %q, want %s %q\n%s", tc.qname, dns.TypeToString[tc.qtype], tc.server,
					dns.RcodeToString[r.Rcode], got, dns.RcodeToString[tc.rcode], tc.answers, r)
			}
			if tc.authority != nil {
				tc.authority(t, r)
			}
		})
	}
}

// rrData is rr's data without the header ("127.0.0.1", "1 . alpn=...").
func rrData(rr dns.RR) string {
	hdr := rr.Header().String()
	return rr.String()[len(hdr):]
}
