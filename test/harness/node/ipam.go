package node

import (
	"fmt"
	"net/netip"
	"sync"
)

// ipam hands out the pod CIDR's addresses: .1 is the gateway, Pods get
// .2 onwards, the broadcast address is never used.
type ipam struct {
	cidr netip.Prefix
	mu   sync.Mutex
	used map[netip.Addr]bool
	next netip.Addr
}

func newIPAM(cidr netip.Prefix) *ipam {
	return &ipam{cidr: cidr, used: map[netip.Addr]bool{}, next: gateway(cidr).Next()}
}

// gateway is the first address of cidr: the host end of every pod veth.
func gateway(cidr netip.Prefix) netip.Addr { return cidr.Addr().Next() }

// allocate returns a free address, going round the range so that an
// address just released is reused last.
func (a *ipam) allocate() (netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	first := gateway(a.cidr).Next()
	ip := a.next
	for range 1 << (32 - a.cidr.Bits()) {
		if !a.cidr.Contains(ip) || !a.cidr.Contains(ip.Next()) { // past the end or broadcast
			ip = first
		}
		if !a.used[ip] {
			a.used[ip] = true
			a.next = ip.Next()
			return ip, nil
		}
		ip = ip.Next()
	}
	return netip.Addr{}, fmt.Errorf("pod CIDR %v is exhausted", a.cidr)
}

func (a *ipam) release(ip netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.used, ip)
}
