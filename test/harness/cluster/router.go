package cluster

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Nft is nftables' command (Debian's nftables package).
var Nft = "/usr/sbin/nft"

// RouterPublicIP is the outside router's public address: what the public
// DNS answers for a host published by a port forward ([Cluster.PortForward]).
var RouterPublicIP = netip.MustParseAddr("203.0.113.80")

// PortForward publishes the node's NodePort nodePort as port of the outside
// router's public address public, the way a home or office router forwards
// a port, and with no NAT loopback: the forward (a DNAT in outside's output
// hook) applies only to connections that clients on the internet open
// (outside itself, [ExternalClientIP]); a connection from the cluster
// arrives at public, which outside holds but where nothing listens, and is
// refused. It returns what removes the forward and the address again.
func (c *Cluster) PortForward(public netip.Addr, port, nodePort int32) (remove func() error, err error) {
	if _, err := c.Outside.IP("addr", "replace", netip.PrefixFrom(public, 32).String(), "dev", "lo"); err != nil {
		return nil, fmt.Errorf("cluster: port forward: %w", err)
	}
	table := "router_" + strings.NewReplacer(".", "_", ":", "_").Replace(public.String()) + fmt.Sprintf("_%d", port)
	remove = func() error {
		var errs []error
		if _, err := c.Outside.Run(Nft, "delete", "table", "ip", table); err != nil {
			errs = append(errs, err)
		}
		if _, err := c.Outside.IP("addr", "del", netip.PrefixFrom(public, 32).String(), "dev", "lo"); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	steps := [][]string{
		{"add", "table", "ip", table},
		{"add", "chain", "ip", table, "output", "{ type nat hook output priority -100 ; }"},
		{"add", "rule", "ip", table, "output", "ip", "daddr", public.String(), "tcp", "dport", fmt.Sprint(port), "dnat", "to", netip.AddrPortFrom(c.Nodes[0].IP, uint16(nodePort)).String()},
	}
	for _, args := range steps {
		if _, err := c.Outside.Run(Nft, args...); err != nil {
			return nil, errors.Join(fmt.Errorf("cluster: port forward: %w", err), remove())
		}
	}
	return remove, nil
}
