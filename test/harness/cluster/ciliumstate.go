package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"sort"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness/hoststate"
)

// What cilium-agent has programmed, read from its API socket and the
// machine's BPF state: the queries a test asks of a dataplane with
// [Capabilities.Frontends] or [Capabilities.BPFPrograms].

// CiliumFrontends returns the frontends of the services cilium-agent has
// programmed (its API's GET /v1/service), as address:port; an error
// outside the cilium mode.
func (c *Cluster) CiliumFrontends(ctx context.Context) ([]netip.AddrPort, error) {
	var services []struct {
		Spec struct {
			Frontend struct {
				IP   string `json:"ip"`
				Port uint16 `json:"port"`
			} `json:"frontend-address"`
		} `json:"spec"`
	}
	if err := c.ciliumAPI(ctx, "/v1/service", &services); err != nil {
		return nil, err
	}
	var out []netip.AddrPort
	for _, s := range services {
		if a, err := netip.ParseAddr(s.Spec.Frontend.IP); err == nil {
			out = append(out, netip.AddrPortFrom(a, s.Spec.Frontend.Port))
		}
	}
	return out, nil
}

// CiliumActiveBackends returns, per Service ("namespace/name"), how many
// active backends (those chosen for new connections) its ClusterIP
// frontend has in cilium-agent's BPF maps: the agent's frontends table
// (GET /statedb/dump/frontends), counting only frontends whose
// reconciliation into the maps is done. That is the moment a Service's
// endpoints are ready for a client on this dataplane, as kube-proxy's sync
// is on the others. An error outside the cilium mode.
func (c *Cluster) CiliumActiveBackends(ctx context.Context) (map[string]int, error) {
	var dump struct {
		Frontends []struct {
			Type        string
			ServiceName string
			Status      struct {
				Kind string `json:"kind"`
			}
			Backends []struct {
				State int // 0 is active
			}
		} `json:"frontends"`
	}
	if err := c.ciliumAPI(ctx, "/statedb/dump/frontends", &dump); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, fe := range dump.Frontends {
		if fe.Type != "ClusterIP" || fe.Status.Kind != "Done" {
			continue
		}
		for _, b := range fe.Backends {
			if b.State == 0 {
				out[fe.ServiceName]++
			}
		}
	}
	return out, nil
}

// ciliumAPI GETs path (/v1/service, say) from the agent's API socket
// into v.
func (c *Cluster) ciliumAPI(ctx context.Context, path string, v any) error {
	if c.cilium == nil {
		return fmt.Errorf("cluster: the %s dataplane has no cilium-agent", c.opts.Dataplane.Name())
	}
	sock := filepath.Join(c.cilium.dir, "run", "cilium.sock")
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://cilium"+path, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("cilium API %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("cilium API %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("cilium API %s: %s: %s", path, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("cilium API %s: %w", path, err)
	}
	return nil
}

// AttachedBPFPrograms returns the names of the BPF programs attached, on
// this machine, to the cgroup2 root, to the node's cgroup or through a BPF
// link (a device's tcx hook, say), sorted, each once: in the cilium mode,
// the agent's socket load balancer (cil_sock4_connect, from bpf_sock.c, on
// the node's cgroup) and the Pods' veth programs (cil_from_container, from
// bpf_lxc.c).
func (c *Cluster) AttachedBPFPrograms() ([]string, error) {
	b, err := hoststate.TakeBPF()
	if err != nil {
		return nil, err
	}
	node, err := c.NodeCgroupPrograms()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, a := range append(b.Cgroup, node...) {
		seen[a.Name] = true
	}
	for _, l := range b.Links {
		if n := b.Progs[l.ProgID]; n != "" {
			seen[n] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// NodeCgroupPrograms returns the BPF programs attached to the node's
// cgroup: none where the dataplane has no socket programs, and the node
// no cgroup.
func (c *Cluster) NodeCgroupPrograms() ([]hoststate.Attachment, error) {
	if c.topo.cgroup == nil {
		return nil, nil
	}
	return hoststate.CgroupPrograms(c.topo.cgroup.Path())
}

// NodeCgroup is the node's cgroup as /proc/PID/cgroup names it for a
// process in it ("/hpt<PID>-node-NAME"); "" when the node has none.
func (c *Cluster) NodeCgroup() string {
	if c.topo.cgroup == nil {
		return ""
	}
	return "/" + c.topo.cgroup.Name
}

// CiliumPolicyEnforcement returns what cilium-agent enforces on the
// endpoint of Pod namespace/name (its API's GET /v1/endpoint, the realized
// policy's policy-enabled): "ingress", "egress", "both" or "none"; an
// error outside the cilium mode or when the agent has no such endpoint.
func (c *Cluster) CiliumPolicyEnforcement(ctx context.Context, namespace, name string) (string, error) {
	ep, err := c.ciliumEndpoint(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	return ep.Status.Policy.Realized.Enabled, nil
}

// CiliumEndpoint is what cilium-agent holds of a Pod's endpoint.
type CiliumEndpoint struct {
	// IPv4 is the Pod's address, as its CNI plugin gave it.
	IPv4 netip.Addr
	// Interface is the host end of the Pod's veth, in the node's
	// namespace, where the agent attaches the Pod's programs.
	Interface string
}

// CiliumEndpoint returns cilium-agent's endpoint of Pod namespace/name (its
// API's GET /v1/endpoint); an error outside the cilium mode or when the
// agent has no such endpoint.
func (c *Cluster) CiliumEndpoint(ctx context.Context, namespace, name string) (CiliumEndpoint, error) {
	ep, err := c.ciliumEndpoint(ctx, namespace, name)
	if err != nil {
		return CiliumEndpoint{}, err
	}
	out := CiliumEndpoint{Interface: ep.Status.Networking.InterfaceName}
	for _, a := range ep.Status.Networking.Addressing {
		if ip, err := netip.ParseAddr(a.IPv4); err == nil {
			out.IPv4 = ip
			break
		}
	}
	return out, nil
}

// ciliumEndpointModel is the part of the agent's endpoint model the
// harness reads.
type ciliumEndpointModel struct {
	Status struct {
		ExternalIdentifiers struct {
			Namespace string `json:"k8s-namespace"`
			Pod       string `json:"k8s-pod-name"`
		} `json:"external-identifiers"`
		Networking struct {
			Addressing []struct {
				IPv4 string `json:"ipv4"`
			} `json:"addressing"`
			InterfaceName string `json:"interface-name"`
		} `json:"networking"`
		Policy struct {
			Realized struct {
				Enabled string `json:"policy-enabled"`
			} `json:"realized"`
		} `json:"policy"`
	} `json:"status"`
}

// ciliumEndpoint is the agent's endpoint of Pod namespace/name.
func (c *Cluster) ciliumEndpoint(ctx context.Context, namespace, name string) (*ciliumEndpointModel, error) {
	var endpoints []ciliumEndpointModel
	if err := c.ciliumAPI(ctx, "/v1/endpoint", &endpoints); err != nil {
		return nil, err
	}
	for i, ep := range endpoints {
		if id := ep.Status.ExternalIdentifiers; id.Namespace == namespace && id.Pod == name {
			return &endpoints[i], nil
		}
	}
	return nil, fmt.Errorf("cluster: cilium-agent has no endpoint for pod %s/%s", namespace, name)
}

// DeviceBPFPrograms returns the names of the BPF programs attached to the
// tcx hooks (ingress and egress) of device dev of the node's namespace,
// sorted: where cilium-agent attaches its device programs.
func (c *Cluster) DeviceBPFPrograms(dev string) ([]string, error) {
	var ids []int
	if err := c.topo.node.Do(func() error {
		for _, egress := range []bool{false, true} {
			got, err := hoststate.TCXPrograms(dev, egress)
			if err != nil {
				return err
			}
			ids = append(ids, got...)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	b, err := hoststate.TakeBPF()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		names = append(names, b.Progs[id])
	}
	sort.Strings(names)
	return names, nil
}
