package hairpin

import (
	"context"
	"testing"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestQueriesAreCountedByTypeAndOutcome(t *testing.T) {
	served := newTestHairpin(syncedCache(t, testZones, ips("127.77.0.10"), "app.example.com"), testZones)
	noProxy := newTestHairpin(syncedCache(t, testZones, nil, "app.example.com"), testZones)
	cases := []struct {
		h       *Hairpin
		qtype   uint16
		outcome string
	}{
		{served, dns.TypeA, outcomeAnswer},
		{served, dns.TypeAAAA, outcomeNoData},
		{served, dns.TypeHTTPS, outcomeNoData},
		{noProxy, dns.TypeA, outcomeNoProxy},
	}
	for _, tc := range cases {
		qt := dns.TypeToString[tc.qtype]
		counter := queriesTotal.WithLabelValues("", qt, tc.outcome)
		before := testutil.ToFloat64(counter)
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		tc.h.ServeDNS(context.Background(), rec, test.Case{Qname: "app.example.com.", Qtype: tc.qtype}.Msg())
		if got := testutil.ToFloat64(counter) - before; got != 1 {
			t.Errorf("%s %s: counted %v, want 1", qt, tc.outcome, got)
		}
	}
}

func TestHostGaugesFollowThePublishedIndex(t *testing.T) {
	hc := syncedCache(t, testZones, ips("127.77.0.10"), "a.example.com", "*.w.example.com", "outside.org", "bad_name.example.com")
	hc.publish()
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"exact", testutil.ToFloat64(hostsServed.WithLabelValues(hc.id, "exact")), 1},
		{"wildcard", testutil.ToFloat64(hostsServed.WithLabelValues(hc.id, "wildcard")), 1},
		{"outside_zones", testutil.ToFloat64(hostsRejected.WithLabelValues(hc.id, rules.ReasonOutsideZones)), 1},
		{"invalid", testutil.ToFloat64(hostsRejected.WithLabelValues(hc.id, rules.ReasonInvalid)), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
