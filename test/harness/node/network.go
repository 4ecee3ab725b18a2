package node

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"

	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// podNetwork is a Pod's network namespace and veth, ptp-CNI style, or as
// a CNI plugin attached it.
type podNetwork struct {
	ns       *netns.NS
	ip       netip.Addr
	hostVeth string // in the node's namespace
	owned    bool   // false for hostNetwork Pods, which use the node's

	cni         *CNI         // the network that attaches it, if one does
	cniArgs     string       // its CNI_ARGS
	containerID string       // its CNI_CONTAINERID
	nodeNS      *netns.NS    // where the plugins run
	cniList     *cniConfList // the conflist its ADD ran, once it succeeded
	cniResult   []byte       // and that ADD's result
}

// newPodNS creates the network namespace of the Pod uid. What runs in it
// runs in the node's cgroup: the Pod is the node's.
func (n *Node) newPodNS(uid string) (*netns.NS, error) {
	ns, err := netns.New("pod-" + shortID(uid, 8))
	if err != nil {
		return nil, err
	}
	ns.Cgroup = n.cfg.NodeNS.Cgroup
	return ns, nil
}

// setUpNetwork creates the Pod's namespace with eth0 = ip/32 and a default
// route via the gateway, and in the node's namespace the host end with the
// gateway as /32 and a /32 route to ip. Nothing is left on failure.
func (n *Node) setUpNetwork(uid string, ip netip.Addr) (_ *podNetwork, retErr error) {
	ns, err := n.newPodNS(uid)
	if err != nil {
		return nil, err
	}
	pn := &podNetwork{ns: ns, ip: ip, hostVeth: "veth" + shortID(uid, 11), owned: true}
	defer func() {
		if retErr != nil {
			_ = pn.tearDown()
		}
	}()
	gw := gateway(n.cfg.PodCIDR)
	if err := netns.Veth(ns, "eth0", n.cfg.NodeNS, pn.hostVeth); err != nil {
		return nil, err
	}
	steps := []struct {
		ns   *netns.NS
		args []string
	}{
		{ns, []string{"addr", "add", netip.PrefixFrom(ip, 32).String(), "dev", "eth0"}},
		{ns, []string{"route", "add", gw.String(), "dev", "eth0", "scope", "link"}},
		{ns, []string{"route", "add", "default", "via", gw.String(), "dev", "eth0", "onlink"}},
		{n.cfg.NodeNS, []string{"addr", "add", netip.PrefixFrom(gw, 32).String(), "dev", pn.hostVeth}},
		{n.cfg.NodeNS, []string{"route", "add", netip.PrefixFrom(ip, 32).String(), "dev", pn.hostVeth, "scope", "link", "src", n.cfg.NodeIP.String()}},
	}
	for _, s := range steps {
		if _, err := s.ns.IP(s.args...); err != nil {
			return nil, err
		}
	}
	return pn, nil
}

// hostNetwork is the node's own namespace, for hostNetwork Pods.
func (n *Node) hostNetwork() *podNetwork {
	return &podNetwork{ns: n.cfg.NodeNS, ip: n.cfg.NodeIP}
}

// tearDown deletes the namespace, which takes the veth pair, its routes and
// every process left inside with it; the CNI network that attached it
// first gets its DEL, with the conflist and result of the ADD (libcni
// caches both for it), as from a runtime that removes the sandbox. The
// namespace goes also when the DEL fails.
func (pn *podNetwork) tearDown() error {
	if !pn.owned {
		return nil
	}
	var errs []error
	if pn.cniList != nil {
		if err := pn.cniList.del(pn.cniInvoker(), pn.cniResult); err != nil {
			errs = append(errs, err)
		}
	}
	if err := pn.ns.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pod network %s: %w", pn.ip, err)
	}
	return nil
}

// shortID is a stable hex name of n characters for id.
func shortID(id string, n int) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])[:n]
}
