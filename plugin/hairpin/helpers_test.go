package hairpin

import (
	"context"
	"maps"
	"net"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

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

// The proxy Service of the explicit form in tests.
const (
	defaultProxyNamespace = "hairpin-system"
	defaultProxyName      = "hairpin-proxy"
)

// syncedCache returns a serving cache with one explicit target that has the
// given addresses, as if an Ingress named hosts and the first sync had
// happened.
func syncedCache(t testing.TB, zones []string, proxy []net.IP, hosts ...string) *hostCache {
	t.Helper()
	hc := newHostCache(nil, settings{zones: zones, proxyNamespace: defaultProxyNamespace, proxyName: defaultProxyName})
	tgt := hc.targets[defaultProxyNamespace+"/"+defaultProxyName]
	tgt.store(splitFamilies(proxy))
	hc.mu.Lock()
	hc.setNamedClaimsLocked(ownerRef{kind: rules.KindIngress, key: "test/app"}, hc.claimsFor(hosts, selection{Target: tgt}), time.Now())
	hc.mu.Unlock()
	hc.publish()
	hc.open.Store(true)
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

// gatewayKindsStarted returns the Gateway API kinds watched, with their
// versions.
func (hc *hostCache) gatewayKindsStarted() map[string]string {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return maps.Clone(hc.gateway.started)
}
