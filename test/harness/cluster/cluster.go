package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/netns"
	"github.com/coredns-hairpin/hairpin/test/harness/node"
)

var everything = labels.Everything()

// Options configures [New] and [Start].
type Options struct {
	// Dataplane serves the Services and attaches the Pods: [KubeProxy] or
	// [Cilium] ([DataplaneNamed]). Required.
	Dataplane Dataplane
	// Helm renders Cilium's chart for the Cilium dataplane. Default:
	// harness.RequireHelm.
	Helm *harness.Helm
	// AssetsDir holds etcd and the Kubernetes binaries. Default:
	// $KUBEBUILDER_ASSETS.
	AssetsDir string
	// Images maps the image references Pods name to what runs them.
	Images map[string]node.Image
	// PublicNames are the public DNS's records.
	PublicNames map[string]netip.Addr
	// GatewayAPI installs that channel's Gateway API CRDs (see harness).
	GatewayAPI string
	// CRDDirs are further CRD folders the control plane installs at start.
	CRDDirs []string
	// ClusterDomain is the cluster's DNS domain, kubelet's
	// --cluster-domain: the Pods' search path. Default: [ClusterDomain].
	// The kube-dns Corefile must serve it ([KubeDNSOptions]).
	ClusterDomain string
	// Name tells this cluster's namespaces apart from those of other
	// clusters of the same process. Default: the dataplane's name.
	Name string
	// Output receives the cluster's log: the processes it starts, the load
	// balancer's errors and, after a failure, the processes' output and
	// the Pods' state. Default: stderr; [Start]: the test's log.
	Output io.Writer
	// HostSearch are the node's own search domains, in its resolv.conf:
	// kubelet appends them to a Pod's cluster domains (a Cozystack
	// tenant's node searches the platform's cozy.local).
	HostSearch []string
}

// Cluster is a running single-node cluster with a real dataplane.
type Cluster struct {
	// CP is the control plane; CP.Clientset and CP.Kubeconfig reach it from
	// the test process.
	CP *harness.ControlPlane
	// Nodes are the cluster's nodes, each with its plan and the agent that
	// runs its Pods.
	Nodes []*Node
	// NodeNS and Outside are the node's and the outside world's network
	// namespaces.
	NodeNS, Outside *netns.NS

	opts      Options
	life      *harness.Suite // the cluster's testing.TB: what it starts, its one teardown
	dir       string
	topo      *topology
	kcm       *harness.Process
	scheduler *harness.Process
	kubeProxy *harness.Process
	ciliumDir string  // cilium-agent, cilium-cni and share/, with Cilium
	cilium    *cilium // the running agent, with Cilium
	lb        *loadBalancer
	dns       *publicDNS
}

// Dataplane is what serves the cluster's Services and attaches its Pods.
func (c *Cluster) Dataplane() Dataplane { return c.opts.Dataplane }

// Capabilities are the cluster's dataplane's.
func (c *Cluster) Capabilities() Capabilities { return c.opts.Dataplane.Capabilities() }

// start starts the cluster's parts in order, each pushing what undoes it
// onto the cluster's teardown, which [Cluster.Close] runs last-pushed
// first: the namespaces go after every process in them.
func (c *Cluster) start(ctx context.Context) error {
	t := c.life
	if err := c.planNodes(); err != nil {
		return err
	}
	var err error
	if c.topo, err = newTopology(c.opts.Name, c.Nodes[0].NodePlan, c.Capabilities()); err != nil {
		return err
	}
	c.NodeNS, c.Outside = c.topo.node, c.topo.outside
	t.Defer("network namespaces", c.topo.close)
	crds := append(append([]string{}, c.opts.CRDDirs...), c.opts.Dataplane.crdDirs(c)...)
	c.CP, err = harness.StartControlPlane(harness.ControlPlaneOptions{
		AssetsDir:        c.opts.AssetsDir,
		Dir:              filepath.Join(c.dir, "controlplane"),
		GatewayAPI:       c.opts.GatewayAPI,
		CRDDirs:          crds,
		Netns:            c.topo.node,
		ServiceCIDR:      ServiceCIDR,
		AdvertiseAddress: c.Nodes[0].IP,
		ServingIPs:       []netip.Addr{KubernetesIP},
		APIServerFlags: map[string][]string{
			// envtest turns ServiceAccount admission off; a cluster has it,
			// and it is what mounts each Pod's API token.
			"disable-admission-plugins":       {"StorageObjectInUseProtection"},
			"kubelet-preferred-address-types": {"InternalIP"},
		},
	})
	if err != nil {
		return err
	}
	t.Defer("control plane", func() error {
		// As envtest's stop: what it says is logged, not a failure.
		if err := c.CP.Stop(); err != nil {
			t.Logf("cluster: stop the control plane: %v", err)
		}
		return nil
	})
	if err := c.startComponents(t); err != nil {
		return err
	}
	if c.dns, err = startPublicDNS(t, c, c.opts.PublicNames); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	n := c.Nodes[0]
	n.Node, err = node.Start(ctx, node.Config{
		Client:         c.CP.Clientset,
		NodeName:       n.Name,
		NodeIP:         n.IP,
		NodeNS:         c.topo.node,
		PodCIDR:        n.PodCIDR,
		CNI:            c.opts.Dataplane.cni(c),
		ClusterDNS:     DNSIP,
		ClusterDomain:  c.opts.ClusterDomain,
		HostResolvConf: hostResolvConf(c.opts.HostSearch),
		// The kubelet API, for `kubectl logs` and `kubectl run --rm -i`
		// through the apiserver, as the docs run them.
		KubeletPort: KubeletPort,
		Images:      c.opts.Images,
		Dir:         filepath.Join(c.dir, "node"),
		// A deleted Pod gets its terminationGracePeriodSeconds, as from
		// kubelet: the proxy's lame duck and drain (35 s in the chart) are
		// what the lifecycle test measures.
		MaxGracePeriod: 40 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("node agent: %w", err)
	}
	t.Defer("node agent "+n.Name, n.Stop)
	t.Defer("dump on failure", func() error { c.dumpOnFailure(t); return nil })
	if err := c.opts.Dataplane.waitReady(t, c); err != nil {
		return err
	}
	if c.lb, err = startLoadBalancer(t, c.CP.Clientset, c.topo.outside, n.NodePlan, c.dir); err != nil {
		return err
	}
	t.Defer("load balancer", func() error { c.lb.close(); return nil })
	return c.waitReady(ctx)
}

// hostResolvConf is the node's resolv.conf: the public DNS, and search
// domains of its own.
func hostResolvConf(search []string) string {
	rc := "nameserver " + PublicDNSIP.String() + "\n"
	if len(search) > 0 {
		rc = "search " + strings.Join(search, " ") + "\n" + rc
	}
	return rc
}

// waitReady waits for what a new cluster has before its first Pod: a Ready
// Node, the default ServiceAccount and kube-root-ca.crt.
func (c *Cluster) waitReady(ctx context.Context) error {
	cs := c.CP.Clientset
	probes := []struct {
		what  string
		probe harness.Probe
	}{
		{"node " + c.Nodes[0].Name + " Ready", func(ctx context.Context) error {
			n, err := cs.CoreV1().Nodes().Get(ctx, c.Nodes[0].Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("not Ready")
		}},
		{"the default ServiceAccount", func(ctx context.Context) error {
			_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
			return err
		}},
		{"kube-root-ca.crt", func(ctx context.Context) error {
			_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err
		}},
	}
	for _, p := range probes {
		if err := harness.Poll(ctx, p.probe); err != nil {
			return fmt.Errorf("waiting for %s: %w", p.what, err)
		}
	}
	return nil
}

// SetPublicName points name at ip in the public DNS.
func (c *Cluster) SetPublicName(name string, ip netip.Addr) error { return c.dns.Set(name, ip) }

// DeletePublicName removes name from the public DNS.
func (c *Cluster) DeletePublicName(name string) error { return c.dns.Delete(name) }

// LoadBalancerLog returns HAProxy's connection log since its last restart.
func (c *Cluster) LoadBalancerLog() string { return c.lb.Log() }

// OutsideExchange sends one DNS query from outside.
func (c *Cluster) OutsideExchange(ctx context.Context, server, name string, qtype uint16) (*dns.Msg, error) {
	return Exchange(ctx, c.topo.outside, server, name, qtype)
}

// NodeExchange sends one DNS query from inside the node, e.g. to one
// CoreDNS Pod's address, with no Pod or process in between.
func (c *Cluster) NodeExchange(ctx context.Context, server, name string, qtype uint16) (*dns.Msg, error) {
	return Exchange(ctx, c.topo.node, server, name, qtype)
}

// Exchange sends one DNS query from inside ns (a Pod's, say: see
// node.Node.PodNetwork), with a 2 s timeout.
func Exchange(ctx context.Context, ns *netns.NS, server, name string, qtype uint16) (*dns.Msg, error) {
	var r *dns.Msg
	err := ns.Do(func() error {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qtype)
		cl := &dns.Client{Timeout: 2 * time.Second}
		var err error
		r, _, err = cl.ExchangeContext(ctx, m, server)
		return err
	})
	return r, err
}

// Curl runs curl from a client on the internet (outside, from
// ExternalClientIP), resolving through the public DNS, and returns its
// output.
func (c *Cluster) Curl(ctx context.Context, args ...string) (string, error) {
	cmd := c.topo.outside.Command("curl", append([]string{"-sS", "--max-time", "10", "--interface", ExternalClientIP.String()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("curl %v from outside: %w: %s", args, err, out)
	}
	return string(out), nil
}

// LoadBalancerIP returns the LoadBalancer IP of Service ns/name once it has one.
func (c *Cluster) LoadBalancerIP(ctx context.Context, ns, name string) (netip.Addr, error) {
	var ip netip.Addr
	err := harness.Poll(ctx, func(ctx context.Context) error {
		svc, err := c.CP.Clientset.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if a, err := netip.ParseAddr(in.IP); err == nil {
				ip = a
				return nil
			}
		}
		return fmt.Errorf("%s/%s has no LoadBalancer IP yet", ns, name)
	})
	return ip, err
}

// DialNode connects from inside the node (as kubelet's probes do).
func (c *Cluster) DialNode(ctx context.Context, addr string) (net.Conn, error) {
	return c.topo.node.DialContext(ctx, "tcp", addr)
}
