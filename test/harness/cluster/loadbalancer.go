package cluster

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// LBIPsAnnotation asks for specific LoadBalancer IPs, as MetalLB takes it.
const LBIPsAnnotation = "metallb.io/loadBalancerIPs"

// HAProxy is the load balancer's binary (Debian's haproxy package).
var HAProxy = "/usr/sbin/haproxy"

// loadBalancer gives every Service of type LoadBalancer an address from
// LBPool and writes it into the Service's status with ipMode VIP, as MetalLB
// and Cilium LB-IPAM do; outside, HAProxy listens on that address and sends
// each connection, with a PROXY header (`send-proxy`), to the Service's
// NodePort on the node. An ipMode someone else wrote (a cloud controller's
// Proxy) is kept. A Service's spec.externalIPs from LBPool get a frontend
// too, in front of the node's externalIP itself ([externalIPFrontends]).
type loadBalancer struct {
	t       testing.TB
	client  kubernetes.Interface
	outside *netns.NS
	node    NodePlan // the node whose NodePorts HAProxy dials
	dir     string

	mu      sync.Mutex
	bound   map[netip.Addr]bool   // addresses on outside's loopback
	fronts  map[string][]frontend // frontends of no Service's: [Cluster.ExposeProxied]'s, by key
	edge    *edge                 // routes HAProxy's connections to externalIPs
	config  string                // the running HAProxy configuration
	haproxy *harness.Process
	wake    chan struct{}
	stop    context.CancelFunc
	done    chan struct{}
}

func startLoadBalancer(t testing.TB, client kubernetes.Interface, outside *netns.NS, n NodePlan, dir string) (*loadBalancer, error) {
	harness.RequireExecutable(t, HAProxy)
	lb := &loadBalancer{t: t, client: client, outside: outside, node: n, dir: dir, bound: map[netip.Addr]bool{}, edge: &edge{outside: outside, node: n}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	lb.stop = cancel
	factory := informers.NewSharedInformerFactory(client, 0)
	services := factory.Core().V1().Services()
	kick := func(any) {
		select {
		case lb.wake <- struct{}{}:
		default:
		}
	}
	if _, err := services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: kick, DeleteFunc: kick, UpdateFunc: func(_, o any) { kick(o) },
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("cluster: load balancer: %w", err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	go func() {
		defer close(lb.done)
		defer factory.Shutdown()
		for {
			select {
			case <-ctx.Done():
				return
			case <-lb.wake:
			}
			list, err := services.Lister().List(everything)
			if err != nil {
				continue
			}
			if err := lb.sync(ctx, list); err != nil && ctx.Err() == nil {
				t.Logf("cluster: load balancer: %v", err)
				time.AfterFunc(500*time.Millisecond, func() { kick(nil) })
			}
		}
	}()
	return lb, nil
}

// sync allocates addresses, writes statuses and reconfigures HAProxy.
func (lb *loadBalancer) sync(ctx context.Context, list []*corev1.Service) error {
	sort.Slice(list, func(i, j int) bool { return list[i].Namespace+"/"+list[i].Name < list[j].Namespace+"/"+list[j].Name })
	used := map[netip.Addr]bool{}
	var lbs []*corev1.Service
	for _, svc := range list {
		// An externalIP is no LoadBalancer IP to hand out.
		for _, s := range svc.Spec.ExternalIPs {
			if a, err := netip.ParseAddr(s); err == nil {
				used[a] = true
			}
		}
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		lbs = append(lbs, svc)
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if a, err := netip.ParseAddr(in.IP); err == nil {
				used[a] = true
			}
		}
	}
	// The frontends of no Service's hold their addresses too.
	var frontends []frontend
	lb.mu.Lock()
	for _, fs := range lb.fronts {
		for _, f := range fs {
			used[f.ip] = true
			frontends = append(frontends, f)
		}
	}
	lb.mu.Unlock()
	for _, svc := range lbs {
		ip, err := lb.address(svc, used)
		if err != nil {
			return err
		}
		if err := lb.writeStatus(ctx, svc, ip); err != nil {
			return err
		}
		for _, p := range svc.Spec.Ports {
			if p.Protocol != corev1.ProtocolTCP || p.NodePort == 0 {
				continue
			}
			frontends = append(frontends, frontend{name: svc.Namespace + "_" + svc.Name + "_" + fmt.Sprint(p.Port), ip: ip, port: p.Port,
				backend: netip.AddrPortFrom(lb.node.IP, uint16(p.NodePort))})
		}
	}
	return lb.configure(append(frontends, externalIPFrontends(list)...))
}

// front adds frontends that no Service asks for under key, replacing
// those it had, and reconfigures HAProxy.
func (lb *loadBalancer) front(key string, fs []frontend) {
	lb.mu.Lock()
	if lb.fronts == nil {
		lb.fronts = map[string][]frontend{}
	}
	lb.fronts[key] = fs
	lb.mu.Unlock()
	select {
	case lb.wake <- struct{}{}:
	default:
	}
}

// address returns the Service's LoadBalancer IP: the one it has, the one it
// asks for, or the lowest free one of the pool.
func (lb *loadBalancer) address(svc *corev1.Service, used map[netip.Addr]bool) (netip.Addr, error) {
	if want := svc.Annotations[LBIPsAnnotation]; want != "" {
		a, err := netip.ParseAddr(strings.TrimSpace(strings.Split(want, ",")[0]))
		if err != nil || !LBPool.Contains(a) {
			return netip.Addr{}, fmt.Errorf("%s/%s: %s %q is not an address of %s", svc.Namespace, svc.Name, LBIPsAnnotation, want, LBPool)
		}
		used[a] = true
		return a, nil
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil && LBPool.Contains(a) {
			return a, nil
		}
	}
	for a := LBPool.Addr().Next().Next(); LBPool.Contains(a); a = a.Next() {
		if !used[a] && a != PublicDNSIP && a != ExternalClientIP {
			used[a] = true
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%s/%s: the pool %s is exhausted", svc.Namespace, svc.Name, LBPool)
}

// writeStatus records ip in the Service's status, keeping an ipMode that is
// already there.
func (lb *loadBalancer) writeStatus(ctx context.Context, svc *corev1.Service, ip netip.Addr) error {
	ingress := svc.Status.LoadBalancer.Ingress
	if len(ingress) == 1 && ingress[0].IP == ip.String() && ingress[0].IPMode != nil {
		return nil
	}
	mode := corev1.LoadBalancerIPModeVIP
	if len(ingress) == 1 && ingress[0].IPMode != nil {
		mode = *ingress[0].IPMode
	}
	updated := svc.DeepCopy()
	updated.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip.String(), IPMode: &mode}}
	if _, err := lb.client.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("status of %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

// frontend is one public address and port in front of the node: a
// LoadBalancer IP in front of its NodePort, or an externalIP in front of
// itself on the node (see [externalIPFrontends]).
type frontend struct {
	name    string
	ip      netip.Addr
	port    int32
	backend netip.AddrPort
	// external: ip is a Service's externalIP, which outside routes to the
	// node for HAProxy's own connections ([edge]).
	external bool
}

// configure binds the frontends' addresses outside and restarts HAProxy
// when its configuration changed.
func (lb *loadBalancer) configure(frontends []frontend) error {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	for _, f := range frontends {
		if f.external {
			if err := lb.edge.route(f.ip); err != nil {
				return err
			}
		}
		if lb.bound[f.ip] {
			continue
		}
		if err := lb.outside.AddAddr("lo", netip.PrefixFrom(f.ip, 32)); err != nil {
			return err
		}
		lb.bound[f.ip] = true
	}
	conf := haproxyConfig(frontends)
	if conf == lb.config {
		return nil
	}
	path := filepath.Join(lb.dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return err
	}
	if lb.haproxy != nil {
		_ = lb.haproxy.Stop()
		lb.haproxy = nil
	}
	lb.config = conf
	if len(frontends) == 0 {
		return nil
	}
	lb.haproxy = harness.StartCmd(lb.t, "haproxy", lb.outside.Command(HAProxy, "-db", "-f", path))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, f := range frontends {
		addr := netip.AddrPortFrom(f.ip, uint16(f.port)).String()
		if err := lb.haproxy.Ready(ctx, func(ctx context.Context) error {
			c, err := lb.outside.DialContext(ctx, "tcp", addr)
			if err == nil {
				c.Close()
			}
			return err
		}); err != nil {
			return fmt.Errorf("haproxy on %s: %w", addr, err)
		}
	}
	return nil
}

// haproxyConfig is HAProxy in TCP mode with one frontend per address and
// port, each sending PROXY v1 to its backend on the node: a NodePort, or
// an externalIP itself, dialled from OutsideIP (the source [edge] routes).
func haproxyConfig(frontends []frontend) string {
	var b strings.Builder
	b.WriteString("# Written by the coredns-hairpin test cluster: the load balancer in front of the node.\n")
	b.WriteString("global\n    log stdout format raw local0\n\n")
	b.WriteString("defaults\n    mode tcp\n    log global\n    option tcplog\n    timeout connect 5s\n    timeout client 60s\n    timeout server 60s\n")
	frontends = slices.Clone(frontends)
	sort.Slice(frontends, func(i, j int) bool { return frontends[i].name < frontends[j].name })
	for _, f := range frontends {
		fmt.Fprintf(&b, "\nfrontend %s\n    bind %s\n    default_backend %s\n", f.name, netip.AddrPortFrom(f.ip, uint16(f.port)), f.name)
		source := ""
		if f.external {
			source = " source " + OutsideIP.String()
		}
		fmt.Fprintf(&b, "backend %s\n    server node %s send-proxy%s\n", f.name, f.backend, source)
	}
	return b.String()
}

// Log returns what HAProxy logged since its last restart: one line per
// connection.
func (lb *loadBalancer) Log() string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if lb.haproxy == nil {
		return ""
	}
	return lb.haproxy.Output()
}

func (lb *loadBalancer) close() {
	lb.stop()
	<-lb.done
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if lb.haproxy != nil {
		_ = lb.haproxy.Stop()
	}
}
