package hairpin

import (
	"net"
	"slices"
	"sync/atomic"

	core "k8s.io/api/core/v1"
)

// proxyTarget is where a hairpin host is sent: the ClusterIPs of one proxy
// Service, or fixed addresses. Index entries point at a target, so a changed
// Service IP is one atomic store, not an index rebuild; per-class proxies are
// more targets, not a redesign.
type proxyTarget struct {
	name  string // "namespace/name", or "proxy_ip" for fixed addresses
	addrs atomic.Pointer[proxyAddrs]
}

// proxyAddrs is an immutable set of proxy addresses split by family.
type proxyAddrs struct {
	v4 []net.IP
	v6 []net.IP
}

func newProxyTarget(name string) *proxyTarget {
	t := &proxyTarget{name: name}
	t.addrs.Store(&proxyAddrs{})
	return t
}

// newStaticTarget is a target for the proxy_ip option.
func newStaticTarget(ips []net.IP) *proxyTarget {
	t := newProxyTarget("proxy_ip")
	t.addrs.Store(splitFamilies(ips))
	return t
}

// load returns the current addresses; it never returns nil.
func (t *proxyTarget) load() *proxyAddrs { return t.addrs.Load() }

// store replaces the addresses and reports whether they changed.
func (t *proxyTarget) store(a *proxyAddrs) bool {
	old := t.addrs.Swap(a)
	return !old.equal(a)
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

// serviceAddrs returns the ClusterIPs of svc. A headless Service or one that
// is not a ClusterIP-bearing type yields no addresses: there is no single
// address that reaches the proxy.
func serviceAddrs(svc *core.Service) *proxyAddrs {
	if svc == nil {
		return &proxyAddrs{}
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var parsed []net.IP
	for _, s := range ips {
		if s == core.ClusterIPNone {
			return &proxyAddrs{}
		}
		if ip := net.ParseIP(s); ip != nil {
			parsed = append(parsed, ip)
		}
	}
	return splitFamilies(parsed)
}
