package hairpin

import (
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	core "k8s.io/api/core/v1"
)

// target is one proxy that fronts one upstream controller: a discovered
// target Service, the Service of `proxy NAMESPACE/NAME`, or the fixed
// addresses of `proxy_ip`. Index entries point at a target, so a changed
// ClusterIP is one atomic store, not an index rebuild. What the target
// selects (zones, classes, Gateways) is read and written only under
// hostCache.mu; the addresses are read by queries without a lock.
type target struct {
	// The name and the selection; the selection is guarded by hostCache.mu.
	rules.Target
	addrs atomic.Pointer[proxyAddrs]
	// ports names the ports of a discovered target's Service, each of
	// which needs a ready endpoint before the target stops Waiting;
	// guarded by hostCache.mu.
	ports []string
	// readySince is when its Service last became ready for each port,
	// zero while it is not; settleTimer ends its Settling at readySince
	// plus the settle time. Both guarded by hostCache.mu.
	readySince  time.Time
	settleTimer *time.Timer
}

// Rules implements rules.Candidate.
func (t *target) Rules() *rules.Target { return &t.Target }

// targets is the table of known targets of one cache, keyed by name. It is
// guarded by hostCache.mu.
type targets map[string]*target

// selection is the target chosen for one object, nil for none.
type selection = rules.Selection[*target]

// forIngress chooses the target of an Ingress of the given class.
func (ts targets) forIngress(class string) selection { return rules.ForIngress(ts, class) }

// forGateway chooses the target of a Gateway, by name first, then by class.
func (ts targets) forGateway(namespace, name, class string) selection {
	return rules.ForGateway(ts, namespace, name, class)
}

// selectsGateways reports whether any target fronts Gateways.
func (ts targets) selectsGateways() bool { return rules.SelectsGateways(ts) }

// proxyAddrs is an immutable set of proxy addresses split by family.
type proxyAddrs struct {
	v4 []net.IP
	v6 []net.IP
}

var noAddrs = &proxyAddrs{}

func newTarget(rt rules.Target) *target {
	t := &target{Target: rt}
	t.addrs.Store(noAddrs)
	return t
}

// newStaticTarget is the target of the proxy_ip option.
func newStaticTarget(ips []net.IP, spec rules.TargetSpec) *target {
	t := newTarget(rules.Target{Name: "proxy_ip", Spec: spec})
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
