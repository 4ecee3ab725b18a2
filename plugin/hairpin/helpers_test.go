package hairpin

import (
	"context"
	"net"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
)

// nextMarker is what the next plugin answers, so a test can tell a
// pass-through from a hairpin answer.
var nextMarker = test.TXT(`next. 0 IN TXT "passed to next plugin"`)

// nextHandler answers every query with nextMarker.
func nextHandler() plugin.Handler {
	return test.HandlerFunc(func(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Answer = []dns.RR{nextMarker}
		w.WriteMsg(m)
		return dns.RcodeSuccess, nil
	})
}

func ips(ss ...string) []net.IP {
	out := make([]net.IP, len(ss))
	for i, s := range ss {
		out[i] = net.ParseIP(s)
	}
	return out
}

// syncedCache returns a cache that serves hosts with the given proxy
// addresses, as if an Ingress named them and the first sync had happened.
func syncedCache(t testing.TB, zones []string, proxy []net.IP, hosts ...string) *hostCache {
	t.Helper()
	hc := newHostCache(nil, settings{zones: zones})
	hc.target.store(splitFamilies(proxy))
	served, rejected := classifyHosts(hosts, zones)
	hc.mu.Lock()
	hc.claims.set("ingress/test/app", ownerClaims{hosts: served, rejected: rejected, target: hc.target})
	hc.mu.Unlock()
	hc.publish()
	hc.synced.Store(true)
	return hc
}

// newTestHairpin is a handler over hc with the next plugin answering nextMarker.
func newTestHairpin(hc *hostCache, zones []string) *Hairpin {
	h := &Hairpin{Next: nextHandler(), Zones: zones, ttl: defaultTTL}
	if hc != nil {
		h.cache.Store(hc)
	}
	return h
}
