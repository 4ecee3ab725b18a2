package hairpin

import (
	"net"
	"slices"
	"sync/atomic"

	core "k8s.io/api/core/v1"
)

// target is one proxy that fronts one upstream controller: a discovered
// target Service, the Service of `proxy NAMESPACE/NAME`, or the fixed
// addresses of `proxy_ip`. Index entries point at a target, so a changed
// ClusterIP is one atomic store, not an index rebuild. What the target
// selects (zones, classes, Gateways) is read and written only under
// hostCache.mu; the addresses are read by queries without a lock.
type target struct {
	name  string // "namespace/name", or "proxy_ip"
	addrs atomic.Pointer[proxyAddrs]

	// The selection, guarded by hostCache.mu.
	sel targetSelection
}

// targetSelection is what a target fronts and may answer.
type targetSelection struct {
	zones          []string // lowercase FQDNs; empty serves nothing
	ingressClasses []string // sorted; "*" for every class
	gatewayClasses []string // sorted; "*" for every class
	gateways       []string // sorted "namespace/name"
	err            error    // a malformed annotation: the target is disabled
}

// proxyAddrs is an immutable set of proxy addresses split by family.
type proxyAddrs struct {
	v4 []net.IP
	v6 []net.IP
}

var noAddrs = &proxyAddrs{}

func newTarget(name string, sel targetSelection) *target {
	t := &target{name: name, sel: sel}
	t.addrs.Store(noAddrs)
	return t
}

// newStaticTarget is the target of the proxy_ip option.
func newStaticTarget(ips []net.IP, sel targetSelection) *target {
	t := newTarget("proxy_ip", sel)
	t.addrs.Store(splitFamilies(ips))
	return t
}

// load returns the current addresses; it never returns nil.
func (t *target) load() *proxyAddrs { return t.addrs.Load() }

// store replaces the addresses and reports whether they changed.
func (t *target) store(a *proxyAddrs) bool {
	old := t.addrs.Swap(a)
	return !old.equal(a)
}

// enabled reports whether the target may serve anything at all.
func (s targetSelection) enabled() bool { return s.err == nil && len(s.zones) > 0 }

func (s targetSelection) equal(o targetSelection) bool {
	return slices.Equal(s.zones, o.zones) && slices.Equal(s.ingressClasses, o.ingressClasses) &&
		slices.Equal(s.gatewayClasses, o.gatewayClasses) && slices.Equal(s.gateways, o.gateways) &&
		(s.err == nil) == (o.err == nil)
}

// selectsGateways reports whether the target fronts any Gateway, so that the
// Gateway API kinds are watched only when some target needs them.
func (s targetSelection) selectsGateways() bool {
	return len(s.gatewayClasses) > 0 || len(s.gateways) > 0
}

// empty reports whether there is nothing to answer with: the Service is
// missing, headless, or has no ClusterIP yet.
func (a *proxyAddrs) empty() bool { return len(a.v4) == 0 && len(a.v6) == 0 }

func (a *proxyAddrs) equal(b *proxyAddrs) bool {
	eq := func(x, y net.IP) bool { return x.Equal(y) }
	return slices.EqualFunc(a.v4, b.v4, eq) && slices.EqualFunc(a.v6, b.v6, eq)
}

func splitFamilies(ips []net.IP) *proxyAddrs {
	a := &proxyAddrs{}
	for _, ip := range ips {
		if v4 := ip.To4(); v4 != nil {
			a.v4 = append(a.v4, v4)
		} else if ip.To16() != nil {
			a.v6 = append(a.v6, ip.To16())
		}
	}
	return a
}

// serviceAddrs returns the ClusterIPs of svc. A headless Service yields no
// addresses: there is no single address that reaches the proxy.
func serviceAddrs(svc *core.Service) *proxyAddrs {
	if svc == nil {
		return noAddrs
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var parsed []net.IP
	for _, s := range ips {
		if s == core.ClusterIPNone {
			return noAddrs
		}
		if ip := net.ParseIP(s); ip != nil {
			parsed = append(parsed, ip)
		}
	}
	return splitFamilies(parsed)
}
