package cluster

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// externalIPFrontends are the frontends of the Services' spec.externalIPs
// that come from LBPool: the node's address that Cozystack's
// publishing.externalIPs writes on its ingress Service, published in DNS,
// fronted on the internet by a load balancer that sends PROXY. HAProxy
// holds the address outside, as it holds a LoadBalancer IP, and sends each
// connection on to that same address on the node, where the dataplane
// serves it (an externalIP has no NodePort); inside the node the dataplane
// short-circuits it, as it does a LoadBalancer IP.
func externalIPFrontends(list []*corev1.Service) []frontend {
	var out []frontend
	for _, svc := range list {
		for _, s := range svc.Spec.ExternalIPs {
			ip, err := netip.ParseAddr(s)
			if err != nil || !LBPool.Contains(ip) {
				continue
			}
			for _, p := range svc.Spec.Ports {
				if p.Protocol != corev1.ProtocolTCP {
					continue
				}
				out = append(out, frontend{name: fmt.Sprintf("%s_%s_%s_%d", svc.Namespace, svc.Name, ip, p.Port), ip: ip, port: p.Port,
					backend: netip.AddrPortFrom(ip, uint16(p.Port)), external: true})
			}
		}
	}
	return out
}

// edgeTable is outside's routing table for HAProxy's connections to
// externalIPs.
const edgeTable = "200"

// edge routes HAProxy's connections to an externalIP, which outside holds
// on its loopback for the clients, to the node instead: they leave from
// OutsideIP, and a rule ahead of the local table sends what leaves from
// there to edgeTable, where each externalIP goes via the node's IP. The
// node's answers come back from that local address, which outside's end of
// the node's link then accepts (accept_local, no rp_filter). All of it is
// outside's own.
type edge struct {
	outside *netns.NS
	node    NodePlan // the node that serves the externalIPs
	ready   bool
	routed  map[netip.Addr]bool
}

// route sends HAProxy's connections to ip to the node.
func (e *edge) route(ip netip.Addr) error {
	if e.routed[ip] {
		return nil
	}
	if !e.ready {
		steps := [][]string{
			{"rule", "add", "pref", "100", "table", "local"},
			{"rule", "del", "pref", "0", "table", "local"},
			{"rule", "add", "pref", "10", "from", OutsideIP.String(), "table", edgeTable},
		}
		for _, args := range steps {
			if _, err := e.outside.IP(args...); err != nil {
				return fmt.Errorf("cluster: externalIPs: %w", err)
			}
		}
		for _, kv := range [][2]string{
			{"net.ipv4.conf." + e.node.OutsideDev + ".accept_local", "1"},
			{"net.ipv4.conf.all.rp_filter", "0"},
			{"net.ipv4.conf." + e.node.OutsideDev + ".rp_filter", "0"},
		} {
			if err := e.outside.Sysctl(kv[0], kv[1]); err != nil {
				return fmt.Errorf("cluster: externalIPs: %w", err)
			}
		}
		e.ready, e.routed = true, map[netip.Addr]bool{}
	}
	if _, err := e.outside.IP("route", "replace", netip.PrefixFrom(ip, 32).String(), "via", e.node.IP.String(), "table", edgeTable); err != nil {
		return fmt.Errorf("cluster: externalIPs: %w", err)
	}
	e.routed[ip] = true
	return nil
}
