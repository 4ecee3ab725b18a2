package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
)

// Gateway is one Gateway of the Gateway stories, with the NGF objects
// around it: an HTTP listener on port 80, one HTTPRoute (named as the
// Gateway) with Hosts, and the NginxProxy that decides whether it requires
// PROXY.
type Gateway struct {
	// Namespace holds the Gateway, its route and its data plane.
	Namespace, Name string
	// Class is its GatewayClass; ClassProxy, when set, is the NginxProxy
	// (in ProxyNamespace) the class's parametersRef names.
	Class, ClassProxy string
	// GatewayProxy, when set, is the NginxProxy in Namespace that the
	// Gateway's own infrastructure.parametersRef names.
	GatewayProxy string
	// ProxyProtocol is what that NginxProxy's rewriteClientIP.mode says.
	ProxyProtocol bool
	// ListenerHost is the listener's hostname.
	ListenerHost string
	// Hosts are the route's hostnames.
	Hosts []string
	// LBIP is the LoadBalancer IP it asks for (metallb.io/loadBalancerIPs
	// in spec.infrastructure.annotations, which NGF copies to the Service).
	LBIP netip.Addr
}

// ProxyNamespace holds the NginxProxy of a GatewayClass, as NGF's chart
// installs it in its own namespace.
const ProxyNamespace = "nginx-gateway"

// ServiceName is the Gateway's data-plane Service, as NGF names it.
func (g Gateway) ServiceName() string { return cluster.GatewayServiceName(g.Name, g.Class) }

// Ref is namespace/name.
func (g Gateway) Ref() string { return g.Namespace + "/" + g.Name }

// GatewayEnv drives Gateway API objects and the Gateway controller on a
// cluster.
type GatewayEnv struct {
	*Env
	GW         gwclient.Interface
	Dyn        dynamic.Interface
	Controller *cluster.GatewayController
}

// StartGateways starts the Gateway controller on e for t, and stops it in
// t.Cleanup (which removes the NginxProxy CRD).
func (e *Env) StartGateways(t *testing.T) *GatewayEnv {
	t.Helper()
	ge := &GatewayEnv{Env: e}
	var err error
	if ge.GW, err = gwclient.NewForConfig(e.CP.Config); err != nil {
		t.Fatal(err)
	}
	if ge.Dyn, err = dynamic.NewForConfig(e.CP.Config); err != nil {
		t.Fatal(err)
	}
	if ge.Controller, err = e.StartGatewayController(t); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ge.Controller.Stop(); err != nil {
			t.Error(err)
		}
	})
	return ge
}

// Create creates gs with their classes, NginxProxies, namespaces and
// routes, publishes their hosts at their LoadBalancer IPs (as external-dns
// would) and waits until every Gateway is Programmed and an outside client
// reaches it through the load balancer. t.Cleanup deletes all of it.
func (ge *GatewayEnv) Create(ctx context.Context, t *testing.T, gs ...Gateway) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := ge.Delete(ctx, gs...); err != nil {
			t.Errorf("delete the gateways: %v", err)
		}
	})
	for _, g := range gs {
		if err := ge.create(ctx, g); err != nil {
			t.Fatalf("gateway %s: %v", g.Ref(), err)
		}
	}
	for _, g := range gs {
		if err := ge.WaitProgrammed(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
}

func (ge *GatewayEnv) create(ctx context.Context, g Gateway) error {
	cs := ge.CP.Clientset
	for _, ns := range []string{ProxyNamespace, g.Namespace} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	class := &gw.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: g.Class},
		Spec:       gw.GatewayClassSpec{ControllerName: cluster.GatewayControllerName},
	}
	if g.ClassProxy != "" {
		class.Spec.ParametersRef = &gw.ParametersReference{Group: "gateway.nginx.org", Kind: "NginxProxy", Name: g.ClassProxy, Namespace: ptr.To(gw.Namespace(ProxyNamespace))}
		if err := ge.createNginxProxy(ctx, ProxyNamespace, g.ClassProxy, g.ProxyProtocol); err != nil {
			return err
		}
	}
	if _, err := ge.GW.GatewayV1().GatewayClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	infra := &gw.GatewayInfrastructure{Annotations: map[gw.AnnotationKey]gw.AnnotationValue{cluster.LBIPsAnnotation: gw.AnnotationValue(g.LBIP.String())}}
	if g.GatewayProxy != "" {
		infra.ParametersRef = &gw.LocalParametersReference{Group: "gateway.nginx.org", Kind: "NginxProxy", Name: g.GatewayProxy}
		if err := ge.createNginxProxy(ctx, g.Namespace, g.GatewayProxy, g.ProxyProtocol); err != nil {
			return err
		}
	}
	listener := gw.Listener{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}
	if g.ListenerHost != "" {
		listener.Hostname = ptr.To(gw.Hostname(g.ListenerHost))
	}
	gateway := &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: g.Name, Namespace: g.Namespace},
		Spec: gw.GatewaySpec{
			GatewayClassName: gw.ObjectName(g.Class),
			Infrastructure:   infra,
			Listeners:        []gw.Listener{listener},
		},
	}
	if _, err := ge.GW.GatewayV1().Gateways(g.Namespace).Create(ctx, gateway, metav1.CreateOptions{}); err != nil {
		return err
	}
	route := &gw.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: g.Name, Namespace: g.Namespace},
		Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: gw.ObjectName(g.Name)}}},
			Hostnames:       hostnames(g.Hosts),
		},
	}
	if _, err := ge.GW.GatewayV1().HTTPRoutes(g.Namespace).Create(ctx, route, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, h := range g.Hosts {
		if err := ge.SetPublicName(h, g.LBIP); err != nil {
			return err
		}
	}
	return nil
}

func hostnames(hosts []string) []gw.Hostname {
	var out []gw.Hostname
	for _, h := range hosts {
		out = append(out, gw.Hostname(h))
	}
	return out
}

// createNginxProxy creates an NginxProxy; with proxyProtocol its
// rewriteClientIP.mode is ProxyProtocol, trusting every address (the load
// balancer and the hairpin proxy both write the header).
func (ge *GatewayEnv) createNginxProxy(ctx context.Context, ns, name string, proxyProtocol bool) error {
	spec := map[string]any{}
	if proxyProtocol {
		spec["rewriteClientIP"] = map[string]any{
			"mode":             "ProxyProtocol",
			"trustedAddresses": []any{map[string]any{"type": "CIDR", "value": "0.0.0.0/0"}},
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cluster.NginxProxyGVR.GroupVersion().String(),
		"kind":       "NginxProxy",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       spec,
	}}
	_, err := ge.Dyn.Resource(cluster.NginxProxyGVR).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// WaitProgrammed waits until g's status is Programmed with its LoadBalancer
// IP as its address, and its route is Accepted, and an outside client gets
// an answer from it for its first host through the load balancer.
func (ge *GatewayEnv) WaitProgrammed(ctx context.Context, g Gateway) error {
	err := harness.Poll(ctx, func(ctx context.Context) error {
		got, err := ge.GW.GatewayV1().Gateways(g.Namespace).Get(ctx, g.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, string(gw.GatewayConditionProgrammed)) {
			return fmt.Errorf("not Programmed: %+v", got.Status.Conditions)
		}
		if len(got.Status.Addresses) != 1 || got.Status.Addresses[0].Value != g.LBIP.String() {
			return fmt.Errorf("addresses %+v, want %s", got.Status.Addresses, g.LBIP)
		}
		r, err := ge.GW.GatewayV1().HTTPRoutes(g.Namespace).Get(ctx, g.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(r.Status.Parents) != 1 || !meta.IsStatusConditionTrue(r.Status.Parents[0].Conditions, string(gw.RouteConditionAccepted)) {
			return fmt.Errorf("route not Accepted: %+v", r.Status.Parents)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("gateway %s: %w", g.Ref(), err)
	}
	if !g.ProxyProtocol {
		return nil
	}
	return harness.Poll(ctx, func(ctx context.Context) error {
		out, err := ge.Cluster.Curl(ctx, "http://"+g.Hosts[0]+"/")
		if err != nil || !strings.Contains(out, "gateway="+g.Ref()) {
			return fmt.Errorf("outside client through the load balancer to %s: %q, %v", g.Ref(), out, err)
		}
		return nil
	})
}

// Delete deletes gs, their routes, NginxProxies, classes and namespaces
// and their public names, and waits until the namespaces are gone.
func (ge *GatewayEnv) Delete(ctx context.Context, gs ...Gateway) error {
	var errs []error
	ignore := func(err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	namespaces := []string{ProxyNamespace}
	for _, g := range gs {
		ignore(ge.GW.GatewayV1().GatewayClasses().Delete(ctx, g.Class, metav1.DeleteOptions{}))
		for _, h := range g.Hosts {
			ignore(ge.DeletePublicName(h))
		}
		namespaces = append(namespaces, g.Namespace)
	}
	slices.Sort(namespaces)
	namespaces = slices.Compact(namespaces)
	for _, ns := range namespaces {
		ignore(ge.CP.Clientset.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	}
	for _, ns := range namespaces {
		err := harness.Poll(ctx, func(ctx context.Context) error {
			_, err := ge.CP.Clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("namespace %s is still there (%v)", ns, err)
		})
		ignore(err)
	}
	return errors.Join(errs...)
}

// GatewayValues is the chart's values for targets: no ingress-nginx
// target, and one target per entry of targets (name to YAML body, indented
// by four spaces).
func GatewayValues(targets map[string]string) string {
	v := "targets:\n  ingress-nginx:\n    enabled: false\n"
	names := make([]string, 0, len(targets))
	for n := range targets {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		v += "  " + n + ":\n" + targets[n]
	}
	return v
}

// ProxyTarget is the YAML body of a proxied target in front of g's data
// plane: the proxy listens on containerPort and relays port 80 with a
// PROXY header.
func ProxyTarget(g Gateway, zone, selects string, containerPort int) string {
	return fmt.Sprintf(`    zones: [%s]
    %s
    upstream:
      namespace: %s
      name: %s
      podSelector:
        gateway.networking.k8s.io/gateway-name: %s
      ports:
        - name: http
          port: 80
          containerPort: %d
`, zone, selects, g.Namespace, g.ServiceName(), g.Name, containerPort)
}

// GatewayRequest returns the last of g's access-log entries for host whose
// client address (from the PROXY header when g requires one, else the
// connection's) is client, waiting up to 10 s for it, as [Env.WaitRequest].
func (ge *GatewayEnv) GatewayRequest(ctx context.Context, g Gateway, host string, client netip.Addr) (harness.AccessLogEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var found harness.AccessLogEntry
	var seen []harness.AccessLogEntry
	err := harness.Poll(ctx, func(ctx context.Context) error {
		all, err := ge.GatewayAccessLog(ctx, g.Namespace, g.Name)
		if err != nil {
			return err
		}
		seen = slices.DeleteFunc(all, func(a harness.AccessLogEntry) bool { return a.Host != host })
		for _, r := range slices.Backward(seen) {
			addr := r.RemoteAddr
			if g.ProxyProtocol {
				addr = r.ProxyProtocolAddr
			}
			if addr == client.String() {
				found = r
				return nil
			}
		}
		return fmt.Errorf("no request for %s from %s", host, client)
	})
	if err != nil {
		return found, fmt.Errorf("gateway %s's access log: %w; entries for %s: %+v", g.Ref(), err, host, seen)
	}
	return found, nil
}
