package cluster

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// ProxiedNodePorts are the NodePorts of a tenant's ingress-nginx with
// Cozystack's exposeMethod Proxied, by Service port name
// (packages/apps/kubernetes/templates/helmreleases/ingress-nginx.yaml of
// cozystack/cozystack at 3c780acd: controller.service.type NodePort,
// nodePorts http 30000 and https 30001).
var ProxiedNodePorts = map[string]int32{"http": 30000, "https": 30001}

// ExposeProxied exposes ic's controller as Cozystack's exposeMethod
// Proxied does: its Service becomes a NodePort Service on
// [ProxiedNodePorts], with no LoadBalancer IP, and an ingress outside the
// cluster (the management cluster's, which Cozystack points at the
// tenant's nodes on those ports: templates/ingress.yaml, same commit)
// listens on public, ports 80 and 443, and sends each connection with a
// PROXY header to the node's NodePort. ic's hosts resolve to public in
// the public DNS. It returns once that ingress relays.
func (c *Cluster) ExposeProxied(ctx context.Context, ic IngressController, public netip.Addr) error {
	services := c.CP.Clientset.CoreV1().Services(ic.Namespace)
	svc, err := services.Get(ctx, ic.Service(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("cluster: expose %s proxied: %w", ic.Namespace, err)
	}
	svc.Spec.Type = corev1.ServiceTypeNodePort
	delete(svc.Annotations, LBIPsAnnotation)
	var fronts []frontend
	for i, p := range svc.Spec.Ports {
		nodePort, ok := ProxiedNodePorts[p.Name]
		if !ok {
			return fmt.Errorf("cluster: expose %s proxied: no NodePort for its port %q", ic.Namespace, p.Name)
		}
		svc.Spec.Ports[i].NodePort = nodePort
		fronts = append(fronts, frontend{name: fmt.Sprintf("proxied_%s_%d", ic.Namespace, p.Port), ip: public, port: p.Port,
			backend: netip.AddrPortFrom(c.Nodes[0].IP, uint16(nodePort))})
	}
	if svc, err = services.Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("cluster: expose %s proxied: %w", ic.Namespace, err)
	}
	// The apiserver keeps the status of a former LoadBalancer; a cloud's
	// service controller clears it, as the load balancer is gone.
	svc.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	if _, err := services.UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("cluster: expose %s proxied: clear its status: %w", ic.Namespace, err)
	}
	c.lb.front(ic.Namespace, fronts)
	for _, h := range ic.Hosts {
		if err := c.SetPublicName(h, public); err != nil {
			return err
		}
	}
	return harness.Poll(ctx, func(ctx context.Context) error {
		conn, err := c.Outside.DialContext(ctx, "tcp", netip.AddrPortFrom(public, 80).String())
		if err == nil {
			conn.Close()
		}
		return err
	})
}
