package hairpin

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

var (
	testZones = []string{"example.com."}
	soaRR     = test.SOA("example.com. 5 IN SOA ns.dns.example.com. hostmaster.dns.example.com. 1 7200 1800 86400 5")
)

func TestServeDNSQueryTable(t *testing.T) {
	hc := syncedCache(t, testZones, ips("127.77.0.10", "fd00::10"),
		"app.example.com", "*.wild.example.com", "exact.wild.example.com", "outside.org")
	h := newTestHairpin(hc, testZones)

	cases := []struct {
		name string
		test.Case
	}{
		{"A gets the IPv4 ClusterIP", test.Case{Qname: "app.example.com.", Qtype: dns.TypeA,
			Answer: []dns.RR{test.A("app.example.com. 5 IN A 127.77.0.10")}}},
		{"AAAA gets the IPv6 ClusterIP", test.Case{Qname: "app.example.com.", Qtype: dns.TypeAAAA,
			Answer: []dns.RR{test.AAAA("app.example.com. 5 IN AAAA fd00::10")}}},
		{"HTTPS is NODATA with SOA", test.Case{Qname: "app.example.com.", Qtype: dns.TypeHTTPS,
			Ns: []dns.RR{soaRR}}},
		{"SVCB is NODATA with SOA", test.Case{Qname: "app.example.com.", Qtype: dns.TypeSVCB,
			Ns: []dns.RR{soaRR}}},
		{"MX is passed to next", test.Case{Qname: "app.example.com.", Qtype: dns.TypeMX,
			Answer: []dns.RR{nextMarker}}},
		{"TXT is passed to next", test.Case{Qname: "app.example.com.", Qtype: dns.TypeTXT,
			Answer: []dns.RR{nextMarker}}},
		{"CAA is passed to next", test.Case{Qname: "app.example.com.", Qtype: dns.TypeCAA,
			Answer: []dns.RR{nextMarker}}},
		{"case of the query is kept", test.Case{Qname: "ApP.ExAmPlE.CoM.", Qtype: dns.TypeA,
			Answer: []dns.RR{test.A("ApP.ExAmPlE.CoM. 5 IN A 127.77.0.10")}}},
		{"wildcard matches one label", test.Case{Qname: "x.wild.example.com.", Qtype: dns.TypeA,
			Answer: []dns.RR{test.A("x.wild.example.com. 5 IN A 127.77.0.10")}}},
		{"wildcard does not match two labels", test.Case{Qname: "a.b.wild.example.com.", Qtype: dns.TypeA,
			Answer: []dns.RR{nextMarker}}},
		{"wildcard does not match its own parent", test.Case{Qname: "wild.example.com.", Qtype: dns.TypeA,
			Answer: []dns.RR{nextMarker}}},
		{"unknown name is passed to next", test.Case{Qname: "other.example.com.", Qtype: dns.TypeA,
			Answer: []dns.RR{nextMarker}}},
		{"search-path expansion is passed to next", test.Case{Qname: "app.example.com.default.svc.cluster.local.", Qtype: dns.TypeA,
			Answer: []dns.RR{nextMarker}}},
		{"host outside zones is never answered", test.Case{Qname: "outside.org.", Qtype: dns.TypeA,
			Answer: []dns.RR{nextMarker}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := dnstest.NewRecorder(&test.ResponseWriter{})
			if _, err := h.ServeDNS(context.Background(), rec, tc.Msg()); err != nil {
				t.Fatalf("ServeDNS: %v", err)
			}
			if err := test.SortAndCheck(rec.Msg, tc.Case); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestExactHostWinsOverWildcard(t *testing.T) {
	hc := syncedCache(t, testZones, ips("127.77.0.10"), "*.example.com")
	other := newTarget(rules.Target{Name: "other/proxy"})
	other.store(splitFamilies(ips("127.77.0.20")))
	hc.mu.Lock()
	hc.claims.set(&owner{ownerRef: ownerRef{kind: rules.KindIngress, key: "test/exact"}}, ownerClaims{hosts: []string{"exact.example.com."}, target: other})
	hc.mu.Unlock()
	hc.publish()
	h := newTestHairpin(hc, testZones)

	for qname, want := range map[string]string{
		"exact.example.com.": "127.77.0.20",
		"any.example.com.":   "127.77.0.10",
	} {
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		h.ServeDNS(context.Background(), rec, test.Case{Qname: qname, Qtype: dns.TypeA}.Msg())
		if got := harness.ARecords(rec.Msg); len(got) != 1 || len(rec.Msg.Answer) != 1 || got[0].String() != want {
			t.Errorf("%s: got %v, want A %s", qname, rec.Msg.Answer, want)
		}
	}
}

func TestAAAAWithoutIPv6ProxyIsNoData(t *testing.T) {
	h := newTestHairpin(syncedCache(t, testZones, ips("127.77.0.10"), "app.example.com"), testZones)
	tc := test.Case{Qname: "app.example.com.", Qtype: dns.TypeAAAA, Ns: []dns.RR{soaRR}}
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	h.ServeDNS(context.Background(), rec, tc.Msg())
	if err := test.SortAndCheck(rec.Msg, tc); err != nil {
		t.Error(err)
	}
	if !rec.Msg.Authoritative {
		t.Error("NODATA answer is not authoritative")
	}
}

func TestDualStackProxyAnswersBothFamilies(t *testing.T) {
	h := newTestHairpin(syncedCache(t, testZones, ips("127.77.0.10", "127.77.0.11", "fd00::10"), "app.example.com"), testZones)
	for _, tc := range []test.Case{
		{Qname: "app.example.com.", Qtype: dns.TypeA, Answer: []dns.RR{
			test.A("app.example.com. 5 IN A 127.77.0.10"), test.A("app.example.com. 5 IN A 127.77.0.11")}},
		{Qname: "app.example.com.", Qtype: dns.TypeAAAA, Answer: []dns.RR{test.AAAA("app.example.com. 5 IN AAAA fd00::10")}},
	} {
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		h.ServeDNS(context.Background(), rec, tc.Msg())
		if err := test.SortAndCheck(rec.Msg, tc); err != nil {
			t.Errorf("%s: %v", dns.TypeToString[tc.Qtype], err)
		}
	}
}

func TestQueriesPassThroughWhenNotServing(t *testing.T) {
	unsynced := syncedCache(t, testZones, ips("127.77.0.10"), "app.example.com")
	unsynced.open.Store(false)
	cases := []struct {
		name string
		h    *Hairpin
	}{
		{"before OnStartup", newTestHairpin(nil, testZones)},
		{"before the first sync", newTestHairpin(unsynced, testZones)},
		{"proxy Service missing", newTestHairpin(syncedCache(t, testZones, nil, "app.example.com"), testZones)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeHTTPS} {
				want := test.Case{Qname: "app.example.com.", Qtype: qtype, Answer: []dns.RR{nextMarker}}
				rec := dnstest.NewRecorder(&test.ResponseWriter{})
				tc.h.ServeDNS(context.Background(), rec, want.Msg())
				if err := test.SortAndCheck(rec.Msg, want); err != nil {
					t.Errorf("%s: %v", dns.TypeToString[qtype], err)
				}
			}
		})
	}
}

func TestReadyFollowsSync(t *testing.T) {
	hc := syncedCache(t, testZones, ips("127.77.0.10"))
	hc.open.Store(false)
	h := newTestHairpin(hc, testZones)
	if h.Ready() {
		t.Error("Ready() before sync")
	}
	hc.open.Store(true)
	if !h.Ready() {
		t.Error("not Ready() after sync")
	}
	if newTestHairpin(nil, testZones).Ready() {
		t.Error("Ready() before OnStartup")
	}
}

func TestAnswerWithEDNS0(t *testing.T) {
	h := newTestHairpin(syncedCache(t, testZones, ips("127.77.0.10"), "app.example.com"), testZones)
	req := test.Case{Qname: "app.example.com.", Qtype: dns.TypeA}.Msg()
	req.SetEdns0(4096, true)
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	if _, err := h.ServeDNS(context.Background(), rec, req); err != nil {
		t.Fatal(err)
	}
	if rec.Msg == nil || len(rec.Msg.Answer) != 1 || rec.Msg.Rcode != dns.RcodeSuccess {
		t.Fatalf("EDNS0 query: got %v", rec.Msg)
	}
}

func TestRootZoneNoDataReachesTheClient(t *testing.T) {
	useFakeClients(t, ingress("default", "app", "", "app.example.com"))
	port := freeLoopbackPort(t)
	startCorefile(t, fmt.Sprintf(`.:%d {
    bind 127.0.0.1
    hairpin . {
        proxy_ip 127.77.0.10
    }
}`, port))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for _, qtype := range []uint16{dns.TypeAAAA, dns.TypeHTTPS, dns.TypeSVCB} {
		t.Run(dns.TypeToString[qtype], func(t *testing.T) {
			r := exchange(t, addr, "app.example.com.", qtype)
			if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 {
				t.Fatalf("want NODATA with one SOA, got %v", r)
			}
			soa, ok := r.Ns[0].(*dns.SOA)
			if !ok || soa.Hdr.Name != "." || strings.Contains(soa.Ns, "..") || strings.Contains(soa.Mbox, "..") {
				t.Fatalf("authority %v, want a well-formed SOA for the root zone", r.Ns[0])
			}
		})
	}
}
