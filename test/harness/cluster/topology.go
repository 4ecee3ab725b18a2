package cluster

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/coredns-hairpin/hairpin/test/harness/cgroup2"
	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// topology is the node and outside namespaces and the link between them,
// and, for a dataplane with socket programs, the node's cgroup: every
// process of the node's namespace, its Pods' included, starts in it, and
// no other.
type topology struct {
	node, outside *netns.NS
	cgroup        *cgroup2.Group
}

// newTopology creates the two namespaces: the node with n's address, forwarding
// and a default route to outside; outside with the public and LoadBalancer
// addresses on its loopback and, with routePods, a route back to the Pods
// (none where the dataplane masquerades them: their traffic comes from
// the node). Their names carry
// name (the cluster's [Options.Name]), so that several clusters (the
// dataplane tests' shared ones, one per mode) live side by side in one
// process.
func newTopology(name string, n NodePlan, caps Capabilities) (_ *topology, err error) {
	routePods := !caps.MasqueradesPods
	// Only socket programs need the node's cgroup; a user namespace (the
	// demo's) cannot mount the cgroup2 hierarchy.
	withCgroup := caps.SocketLBInNode || caps.SocketLBInPods
	if _, err := netns.Sweep(); err != nil {
		return nil, fmt.Errorf("cluster: sweep what an earlier run left: %w", err)
	}
	if withCgroup {
		if _, err := cgroup2.Sweep(); err != nil {
			return nil, fmt.Errorf("cluster: sweep what an earlier run left: %w", err)
		}
	}
	tp := &topology{}
	defer func() {
		if err != nil {
			err = errors.Join(err, tp.close())
		}
	}()
	if tp.node, err = netns.New("node-" + name); err != nil {
		return nil, err
	}
	if withCgroup {
		if tp.cgroup, err = cgroup2.New("node-" + name); err != nil {
			return nil, err
		}
		tp.node.Cgroup = tp.cgroup
	}
	if tp.outside, err = netns.New("outside-" + name); err != nil {
		return nil, err
	}
	if err := netns.Veth(tp.node, n.Dev, tp.outside, n.OutsideDev); err != nil {
		return nil, err
	}
	steps := []func() error{
		func() error { return tp.node.AddAddr(n.Dev, n.linkAddr()) },
		func() error { return tp.outside.AddAddr(n.OutsideDev, netip.PrefixFrom(n.Gateway, NodeLink.Bits())) },
		func() error { return tp.node.AddRoute("default", "via", n.Gateway.String()) },
		func() error {
			if !routePods {
				return nil
			}
			return tp.outside.AddRoute(n.podRoute()...)
		},
		func() error { return tp.node.Sysctl("net.ipv4.ip_forward", "1") },
		func() error { return tp.outside.Sysctl("net.ipv4.ip_forward", "1") },
		func() error { return tp.outside.AddAddr("lo", netip.PrefixFrom(PublicDNSIP, 32)) },
		func() error { return tp.outside.AddAddr("lo", netip.PrefixFrom(ExternalClientIP, 32)) },
		// What `ip netns exec` mounts over /etc/resolv.conf: clients
		// outside resolve through the public DNS.
		func() error { return tp.outside.WriteEtc("resolv.conf", "nameserver "+PublicDNSIP.String()+"\n") },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("cluster: topology: %w", err)
		}
	}
	return tp, nil
}

// close deletes both namespaces, with everything inside, and the node's
// cgroup.
func (tp *topology) close() error {
	var errs []error
	for _, n := range []*netns.NS{tp.node, tp.outside} {
		if n != nil {
			errs = append(errs, n.Close())
		}
	}
	if tp.cgroup != nil {
		errs = append(errs, tp.cgroup.Close())
	}
	return errors.Join(errs...)
}
