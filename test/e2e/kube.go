package e2e

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// EnsureProxyService creates Namespace hairpin-system and Service
// hairpin-proxy (ports 80 and 443), as manifests/ deploy them, unless they
// exist, and returns the Service's ClusterIP: a loopback address from
// harness.ServiceCIDR that the proxy process can listen on.
func EnsureProxyService(ctx context.Context, cp *harness.ControlPlane) (netip.Addr, error) {
	cs := cp.Clientset
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ProxyNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return netip.Addr{}, fmt.Errorf("create namespace %s: %w", ProxyNamespace, err)
	}
	svc, err := cs.CoreV1().Services(ProxyNamespace).Get(ctx, ProxyService, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		svc, err = cs.CoreV1().Services(ProxyNamespace).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: ProxyService, Labels: map[string]string{"app.kubernetes.io/name": ProxyService}},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app.kubernetes.io/name": ProxyService},
				Ports: []corev1.ServicePort{
					{Name: "http", Port: 80},
					{Name: "https", Port: 443},
				},
			},
		}, metav1.CreateOptions{})
	}
	if err != nil {
		return netip.Addr{}, fmt.Errorf("proxy service %s/%s: %w", ProxyNamespace, ProxyService, err)
	}
	return loopbackClusterIP(svc)
}

// The target label and annotations, as the plugin reads them. The chart's
// invariants (test/manifests/invariants_test.go) spell them out on their
// own, so that a drift between the plugin and the chart fails there.
const (
	TargetLabel              = rules.TargetLabel
	ZonesAnnotation          = rules.ZonesAnnotation
	IngressClassesAnnotation = rules.IngressClassesAnnotation
	GatewayClassesAnnotation = rules.GatewayClassesAnnotation
	GatewaysAnnotation       = rules.GatewaysAnnotation
)

// CreateTarget creates Namespace hairpin-system unless it exists, and in it
// a target Service: labelled [TargetLabel], with annotations, and port 80
// ("http") to targetPort, the proxy's container port for this target's
// upstream, with a ready EndpointSlice. It returns the ClusterIP, a loopback address from
// harness.ServiceCIDR that the proxy process can listen on.
func CreateTarget(ctx context.Context, cp *harness.ControlPlane, name string, targetPort int32, annotations map[string]string) (netip.Addr, error) {
	if err := EnsureNamespace(ctx, cp, ProxyNamespace); err != nil {
		return netip.Addr{}, err
	}
	svc, err := cp.Clientset.CoreV1().Services(ProxyNamespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{TargetLabel: "", "app.kubernetes.io/name": ProxyService},
			Annotations: annotations,
		},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app.kubernetes.io/name": ProxyService},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(targetPort)}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return netip.Addr{}, fmt.Errorf("create target service %s/%s: %w", ProxyNamespace, name, err)
	}
	// The proxy is up: the plugin answers with a target once its Service
	// has a ready endpoint, and envtest runs no EndpointSlice controller.
	if err := harness.ServeEndpoints(ctx, cp.Clientset, svc); err != nil {
		return netip.Addr{}, err
	}
	return loopbackClusterIP(svc)
}

// loopbackClusterIP returns svc's ClusterIP, which must be in
// harness.ServiceCIDR for a test process to listen on it.
func loopbackClusterIP(svc *corev1.Service) (netip.Addr, error) {
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || !harness.ServiceCIDR.Contains(ip) {
		return netip.Addr{}, fmt.Errorf("service %s/%s: ClusterIP %q is not in %s (%v)", svc.Namespace, svc.Name, svc.Spec.ClusterIP, harness.ServiceCIDR, err)
	}
	return ip, nil
}

// EnsureNamespace creates namespace name unless it exists.
func EnsureNamespace(ctx context.Context, cp *harness.ControlPlane, name string) error {
	_, err := cp.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// CreateIngress creates an Ingress of class nginx in namespace ns that routes
// host to Service "app" (which need not exist: only the host matters here).
func CreateIngress(ctx context.Context, cp *harness.ControlPlane, ns, name, host string) (*networkingv1.Ingress, error) {
	return CreateIngressOfClass(ctx, cp, ns, name, "nginx", host)
}

// CreateIngressOfClass is [CreateIngress] with spec.ingressClassName class.
func CreateIngressOfClass(ctx context.Context, cp *harness.ControlPlane, ns, name, class, host string) (*networkingv1.Ingress, error) {
	if err := EnsureNamespace(ctx, cp, ns); err != nil {
		return nil, err
	}
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: networkingv1.IngressSpec{
			IngressClassName: &class,
			Rules: []networkingv1.IngressRule{{
				Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     "/",
						PathType: &prefix,
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: "app", Port: networkingv1.ServiceBackendPort{Number: 80},
						}},
					}},
				}},
			}},
		},
	}
	created, err := cp.Clientset.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create ingress %s/%s for %s: %w", ns, name, host, err)
	}
	return created, nil
}

// CreateGatewayRoute creates GatewayClass [GatewayClass] (unless it exists),
// a Gateway of that class in ns with one HTTP listener on port 80 and no
// hostname, and an HTTPRoute for host attached to it. The Gateway API CRDs
// must be installed.
func CreateGatewayRoute(ctx context.Context, cp *harness.ControlPlane, ns, name, host string) error {
	return CreateGatewayRouteOfClass(ctx, cp, GatewayClass, ns, name, host)
}

// CreateGatewayRouteOfClass is [CreateGatewayRoute] for GatewayClass
// className.
func CreateGatewayRouteOfClass(ctx context.Context, cp *harness.ControlPlane, className, ns, name, host string) error {
	gc, err := gwclient.NewForConfig(cp.Config)
	if err != nil {
		return fmt.Errorf("gateway API client: %w", err)
	}
	if err := EnsureNamespace(ctx, cp, ns); err != nil {
		return err
	}
	class := &gw.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: className},
		Spec:       gw.GatewayClassSpec{ControllerName: "io.cilium/gateway-controller"},
	}
	if _, err := gc.GatewayV1().GatewayClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create gatewayclass %s: %w", className, err)
	}
	gateway := &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gw.GatewaySpec{
			GatewayClassName: gw.ObjectName(className),
			Listeners:        []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}},
		},
	}
	if _, err := gc.GatewayV1().Gateways(ns).Create(ctx, gateway, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create gateway %s/%s: %w", ns, name, err)
	}
	route := &gw.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: gw.ObjectName(name)}}},
			Hostnames:       []gw.Hostname{gw.Hostname(host)},
		},
	}
	if _, err := gc.GatewayV1().HTTPRoutes(ns).Create(ctx, route, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create httproute %s/%s for %s: %w", ns, name, host, err)
	}
	return nil
}
