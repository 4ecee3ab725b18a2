package node

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// CNI is the CNI network that attaches the Pods, run as a kubelet's
// container runtime runs it through libcni: ADD when the sandbox is made,
// DEL when it goes.
type CNI struct {
	// ConfFile is the network's configuration list (a .conflist, as a
	// network's agent writes into /etc/cni/net.d), read at every ADD and
	// kept for that Pod's DEL; while it is missing, Pods wait in
	// ContainerCreating, as behind a runtime whose network is not ready.
	// Its plugins run as a chain.
	ConfFile string
	// Path are the folders that hold the plugins, each named by its type,
	// searched in order (CNI_PATH).
	Path []string
	// Env is added to the plugins' environment (CILIUM_SOCK=..., say).
	Env []string
}

// cniResult is the part of a CNI result (spec 0.3.x and 1.0) the agent
// reads: the addresses the plugin gave eth0.
type cniResult struct {
	IPs []struct {
		Address string `json:"address"`
	} `json:"ips"`
}

// setUpCNINetwork creates the Pod's namespace and has the network's
// plugins attach it; the Pod's IP is the first IPv4 address of the chain's
// result. Nothing is left on failure.
func (n *Node) setUpCNINetwork(pod *corev1.Pod) (_ *podNetwork, retErr error) {
	uid := string(pod.UID)
	ns, err := n.newPodNS(uid)
	if err != nil {
		return nil, err
	}
	pn := &podNetwork{ns: ns, owned: true, cni: n.cfg.CNI, cniArgs: cniArgs(pod), containerID: shortID(uid, 64), nodeNS: n.cfg.NodeNS}
	defer func() {
		if retErr != nil {
			_ = pn.tearDown()
		}
	}()
	list, err := loadCNIConfList(pn.cni.ConfFile)
	if err != nil {
		return nil, err
	}
	out, err := list.attach(pn.cniInvoker())
	if err != nil {
		return nil, err
	}
	// From here on, tearDown deletes the attachment with the list and
	// result of its ADD.
	pn.cniList, pn.cniResult = list, out
	var res cniResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("cni ADD: result: %w: %q", err, out)
	}
	for _, ip := range res.IPs {
		if p, err := netip.ParsePrefix(ip.Address); err == nil && p.Addr().Is4() {
			pn.ip = p.Addr()
			return pn, nil
		}
	}
	return nil, fmt.Errorf("cni ADD: no IPv4 address in the result %q", out)
}

// cniArgs are the CNI_ARGS a kubelet's runtime passes for pod.
func cniArgs(pod *corev1.Pod) string {
	return strings.Join([]string{
		"IgnoreUnknown=1",
		"K8S_POD_NAMESPACE=" + pod.Namespace,
		"K8S_POD_NAME=" + pod.Name,
		"K8S_POD_INFRA_CONTAINER_ID=" + shortID(string(pod.UID), 64),
		"K8S_POD_UID=" + string(pod.UID),
	}, ";")
}

// cniInvoker runs the network's plugins for the Pod's attachment. They run
// in the node's network namespace, where a kubelet's runtime runs them: the
// host end of the Pod's link goes there.
func (pn *podNetwork) cniInvoker() cniInvoker {
	return cniInvoker{
		path: pn.cni.Path,
		env: append([]string{
			"CNI_CONTAINERID=" + pn.containerID,
			"CNI_NETNS=" + pn.ns.Path(),
			"CNI_IFNAME=eth0",
			"CNI_ARGS=" + pn.cniArgs,
		}, pn.cni.Env...),
		command: func(path string) *exec.Cmd { return pn.nodeNS.Command(path) },
	}
}
