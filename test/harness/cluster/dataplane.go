package cluster

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness/node"
)

// Dataplane serves the cluster's Services and attaches its Pods: kube-proxy
// in one of its modes over the node agent's own veth networking
// ([KubeProxy]), or Cilium as kube-proxy replacement with cilium-cni
// ([Cilium]). The cluster asks it what differs and compares no names, as
// kind keeps Networking.KubeProxyMode apart from DisableDefaultCNI; a test
// asks its [Capabilities].
type Dataplane interface {
	// Name names the dataplane: a subtest's name, the default name of a
	// cluster's namespaces.
	Name() string
	// Mode is the name of [AllDataplanes] that selects it in
	// HAIRPIN_DATAPLANES: a mode's own, or for a shape ([Shapes]) the
	// mode of its agent.
	Mode() string
	// Capabilities are the facts a test may ask of it.
	Capabilities() Capabilities

	// prepare checks what it needs on this machine and in AssetsDir before
	// anything starts; an error says why it cannot run here.
	prepare(t testing.TB, c *Cluster) error
	// crdDirs are CRD folders the control plane installs at start.
	crdDirs(c *Cluster) []string
	// controllers is kube-controller-manager's --controllers.
	controllers() string
	// start starts it in the node, after the controller manager and the
	// scheduler, before the node agent.
	start(t testing.TB, c *Cluster) error
	// cni is how the node agent attaches Pods; nil for its own veths.
	cni(c *Cluster) *node.CNI
	// waitReady waits, once the node agent runs, until it serves.
	waitReady(t testing.TB, c *Cluster) error
}

// Capabilities are what a dataplane does that a test's expectations
// follow from: which connections it translates where, what a controller
// then sees, and what of its state can be read.
type Capabilities struct {
	// Agent is the node's process that serves Services ("kube-proxy",
	// "cilium-agent"); no other of [ServiceAgents] runs.
	Agent string
	// KubeProxyReplacement says a CNI's agent serves the Services and no
	// kube-proxy runs.
	KubeProxyReplacement bool
	// Version is the agent's version where it is not the control plane's.
	Version string
	// SocketLBInNode says a connect() in the node's network namespace (a
	// hostNetwork Pod's) to a Service address is translated at connect:
	// the socket's peer is the backend. Otherwise per packet: the peer
	// stays the Service address.
	SocketLBInNode bool
	// SocketLBInPods says the same of a Pod's connect().
	SocketLBInPods bool
	// MasqueradesPods says Pod traffic that leaves the node carries the
	// node's address, so a controller behind the load balancer sees the
	// node, not the Pod.
	MasqueradesPods bool
	// MasqueradesExternal says a connection from the node or a Pod to a
	// Service's external address (LoadBalancer IP, externalIP), which the
	// dataplane short-circuits to a backend, is masqueraded on its way:
	// the backend sees the node's address on the interface toward it.
	// kube-proxy marks a Service's external traffic so (externalTrafficPolicy
	// Cluster). Otherwise the connection keeps its source: the Pod's own,
	// or the one the node's route to the backend picks.
	MasqueradesExternal bool
	// MasqueradesNodeToClusterIP says the node's own connection to a
	// ClusterIP is masqueraded the same way: kube-proxy marks ClusterIP
	// traffic from outside its --cluster-cidr.
	MasqueradesNodeToClusterIP bool
	// Frontends says the agent programs a frontend per Service address,
	// which [Cluster.CiliumFrontends] and [Cluster.CiliumActiveBackends]
	// read; a change is in the dataplane once they show it. Otherwise a
	// connection through the Service address tells: kube-proxy's sync
	// times cannot say which sync holds a change.
	Frontends bool
	// BPFPrograms are programs the dataplane attaches while Pods run, as
	// [Cluster.AttachedBPFPrograms] names them.
	BPFPrograms []string
	// UDPFlowsFollowGoneBackends says a UDP flow whose conntrack entry
	// names a backend keeps going there after that backend's Pod network
	// is gone, until the backend is deleted (Cilium's per-packet
	// balancing, cilium#48714): a client that reuses a source port loses
	// queries in a kube-dns rollout. kube-proxy deletes such entries.
	UDPFlowsFollowGoneBackends bool
}

// ServiceAgents are the processes that can serve Services in a node.
var ServiceAgents = []string{"kube-proxy", "cilium-agent"}

// KubeProxyModes are kube-proxy's modes the cluster runs in.
var KubeProxyModes = []string{"iptables", "nftables"}

// EnvDataplanes names, comma-separated, the dataplanes a run covers
// ([Dataplanes]): for example `nftables,cilium`. Unset, every one.
const EnvDataplanes = "HAIRPIN_DATAPLANES"

// AllDataplanes are the names of the dataplanes a run covers by default, in
// the order a run takes them.
var AllDataplanes = append(slices.Clone(KubeProxyModes), ciliumName)

// OptInDataplanes are dataplanes that a run covers only when
// HAIRPIN_DATAPLANES names them, after [AllDataplanes]: Cilium balancing
// the Pods' connections per packet (socketLB.hostNamespaceOnly, as Istio's
// users set it), whose kube-dns rollouts lose UDP queries to cilium#48714;
// the lifecycle test on it measures that.
var OptInDataplanes = []string{ciliumPerPacketName}

// Dataplanes are the names of the dataplanes this run covers:
// HAIRPIN_DATAPLANES, or all. A name that no dataplane has is dropped here
// and reported by [DataplanesChosen].
var Dataplanes, dataplanesChosen, dataplanesErr = parseDataplanes(os.Getenv(EnvDataplanes))

// DataplanesChosen reports whether HAIRPIN_DATAPLANES named the
// dataplanes, rather than leaving the choice to the default, and an error
// for a name that no dataplane has.
func DataplanesChosen() (bool, error) { return dataplanesChosen, dataplanesErr }

// parseDataplanes reads HAIRPIN_DATAPLANES's value v: the dataplanes it
// names, in [AllDataplanes]' order (all of them when it names none),
// whether it named any, and an error for a name that no dataplane has.
func parseDataplanes(v string) (names []string, chosen bool, err error) {
	want := map[string]bool{}
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		want[n] = true
		if !slices.Contains(AllDataplanes, n) && !slices.Contains(OptInDataplanes, n) && err == nil {
			err = fmt.Errorf("%s: %q is no dataplane; want some of %v", EnvDataplanes, n, append(slices.Clone(AllDataplanes), OptInDataplanes...))
		}
	}
	if len(want) == 0 {
		return slices.Clone(AllDataplanes), false, err
	}
	for _, n := range append(slices.Clone(AllDataplanes), OptInDataplanes...) {
		if want[n] {
			names = append(names, n)
		}
	}
	return names, true, err
}

// Shapes are the dataplanes beyond the modes that [DataplaneNamed] knows,
// each a cluster's shape of a mode's agent. HAIRPIN_DATAPLANES selects a
// shape by its mode ([Covers]); the stories that run on every mode do not
// run on the shapes, each of which has a story of its own.
var Shapes = slices.Sorted(maps.Keys(shapes))

// shapes make the dataplanes of [Shapes].
var shapes = map[string]func() Dataplane{
	CozyTenant: cozyTenant,
}

// Covers reports whether this run covers dp: HAIRPIN_DATAPLANES selects
// its mode.
func Covers(dp Dataplane) bool { return slices.Contains(Dataplanes, dp.Mode()) }

// DataplaneNamed is the dataplane called name, with its defaults: a
// kube-proxy mode, Cilium with [DefaultCiliumValues], Cilium per packet in
// the Pods (opt-in), or a shape.
func DataplaneNamed(name string) (Dataplane, error) {
	if slices.Contains(KubeProxyModes, name) {
		return KubeProxy(name), nil
	}
	switch name {
	case ciliumName:
		return Cilium(DefaultCiliumValues()), nil
	case ciliumPerPacketName:
		v := DefaultCiliumValues()
		v["socketLB.hostNamespaceOnly"] = true
		return ciliumDataplane{shape: ciliumModeShape, name: ciliumPerPacketName, values: v}, nil
	}
	if shape, ok := shapes[name]; ok {
		return shape(), nil
	}
	return nil, fmt.Errorf("cluster: no dataplane %q; want one of %v or %v", name, AllDataplanes, Shapes)
}
