package node

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness/netns"
	"k8s.io/client-go/kubernetes"
)

// Config describes the node an agent runs.
type Config struct {
	// Client is an admin client: it registers the Node, writes Pod status,
	// reads ConfigMaps, Secrets and Services and requests tokens.
	Client kubernetes.Interface
	// NodeName is the Node object's name.
	NodeName string
	// NodeIP is the Node's InternalIP, already configured in NodeNS.
	NodeIP netip.Addr
	// NodeNS is the node's network namespace (lo up, ip_forward on); the
	// host ends of the Pods' veths go there.
	NodeNS *netns.NS
	// PodCIDR is the node's pod range (the Node's spec.podCIDR): .1 is the
	// gateway, Pods get .2, .3… unless CNI attaches them.
	PodCIDR netip.Prefix
	// CNI, when set, attaches every Pod that is not hostNetwork through a
	// CNI plugin, which gives it its address, in place of the agent's own
	// veth and addresses.
	CNI *CNI
	// ClusterDNS is the nameserver of dnsPolicy ClusterFirst.
	ClusterDNS netip.Addr
	// ClusterDomain is the cluster's DNS domain (default cluster.local).
	ClusterDomain string
	// HostResolvConf is the node's resolv.conf, for dnsPolicy Default (and
	// the search domains ClusterFirst appends).
	HostResolvConf string
	// Images maps an image reference, exactly as a PodSpec writes it, to
	// how to run it. A Pod with another image stays Pending with
	// ErrImagePull.
	Images map[string]Image
	// Dir holds the agent's state (roots, volumes, logs); Stop removes it.
	Dir string
	// KubeletPort, when not 0, serves the kubelet API (container logs,
	// exec, running pods) on NodeIP:KubeletPort inside NodeNS, over TLS
	// with a self-signed certificate, and is advertised in the Node status.
	KubeletPort int

	// RestartBackoff is the first delay before a crashed container is
	// started again; it doubles up to 5 minutes (kubelet starts at 10s).
	// Default 1s.
	RestartBackoff time.Duration
	// MaxGracePeriod caps terminationGracePeriodSeconds (and a deletion's
	// grace period), so that tests do not wait 30s. Default 5s. [Node.Stop]
	// gives every Pod at most stopGrace, whatever this is.
	MaxGracePeriod time.Duration
	// Logf, when set, receives the agent's warnings and errors.
	Logf func(format string, args ...any)
}

// Image tells the agent how to run one image reference.
type Image struct {
	// OCILayout is an OCI image layout directory (as `make images` writes
	// under bin/images/): the agent unpacks this machine's architecture
	// and runs its entrypoint, as its user unless the securityContext says
	// otherwise.
	OCILayout string
	// Host runs commands of this machine: the container's root holds
	// read-only binds of /usr (with /bin, /sbin, /lib* as on the host) and
	// copy-on-write views of /etc and /var, so nothing a Pod writes or
	// mounts reaches the host's files.
	Host bool
	// HostPaths are further host directories bound read-only at the same
	// path into a Host image's root (e.g. a binary's folder).
	HostPaths []string
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return fmt.Errorf("node: Config.Client is nil")
	case c.NodeName == "":
		return fmt.Errorf("node: Config.NodeName is empty")
	case !c.NodeIP.Is4():
		return fmt.Errorf("node: Config.NodeIP %v is not an IPv4 address", c.NodeIP)
	case c.NodeNS == nil:
		return fmt.Errorf("node: Config.NodeNS is nil")
	case !c.PodCIDR.Addr().Is4() || c.PodCIDR.Bits() > 30:
		return fmt.Errorf("node: Config.PodCIDR %v is not an IPv4 range of at least 4 addresses", c.PodCIDR)
	case c.Dir == "":
		return fmt.Errorf("node: Config.Dir is empty")
	}
	if c.CNI != nil && (c.CNI.ConfFile == "" || len(c.CNI.Path) == 0) {
		return fmt.Errorf("node: Config.CNI needs ConfFile and Path")
	}
	for ref, img := range c.Images {
		if err := img.validate(); err != nil {
			return fmt.Errorf("node: Config.Images[%q]: %w", ref, err)
		}
	}
	c.PodCIDR = c.PodCIDR.Masked()
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.RestartBackoff <= 0 {
		c.RestartBackoff = time.Second
	}
	if c.MaxGracePeriod <= 0 {
		c.MaxGracePeriod = 5 * time.Second
	}
	return nil
}

func (c *Config) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf("node %s: "+format, append([]any{c.NodeName}, args...)...)
	}
}
