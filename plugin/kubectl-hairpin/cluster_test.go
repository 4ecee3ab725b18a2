package kubectlhairpin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	apps "k8s.io/api/apps/v1"
	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	networking "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// cluster is the state one test case reads: the objects, created in order,
// and what each pod address serves on its metrics port. healthyCluster is
// the state every case starts from; a case changes it.
type cluster struct {
	objects []client.Object
	metrics map[string]string // "podIP:port" -> Prometheus text
}

// The pod addresses of healthyCluster: the test cluster's range, reached
// only through harness.PodTunnel.
const (
	corednsA = "198.18.0.10"
	corednsB = "198.18.0.11"
	proxyA   = "198.18.0.20"
	proxyB   = "198.18.0.21"
)

// healthyCluster is a cluster that hairpin fixes completely:
//   - CoreDNS (our image) behind kube-system/kube-dns, two pods whose
//     metrics show hairpin active with two targets serving, with k3s's
//     Corefile (no rewrite) mounted as k3s mounts it;
//   - ingress-nginx with use-proxy-protocol behind a load balancer that
//     kube-proxy short-circuits, class nginx, an Ingress app.example.com;
//   - Envoy Gateway: Gateway tenant/gw (*.tenant.org) with a
//     ClientTrafficPolicy that turns PROXY on, and an HTTPRoute;
//   - NGINX Gateway Fabric: Gateway web/edge whose class's NginxProxy
//     rewrites client IPs from PROXY, behind a load balancer with
//     ipMode: Proxy, so it needs no target;
//   - two targets in hairpin-system, each with two ready proxy pods whose
//     routes are up.
//
// Fixed ClusterIPs sit in the range's lower band (127.77.0.0/24 of the
// harness's /16), which the apiserver hands out dynamically only when the
// rest is full (KEP-3070); one in the upper part could already be taken by
// a Service created before it with an empty clusterIP, as CI once saw.
func healthyCluster() *cluster {
	c := dnsOnlyCluster()

	nginxLabels := map[string]string{"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "controller"}
	lb := service("ingress-nginx", "ingress-nginx-controller", nginxLabels, "", namedPort("http", 80, "http"), namedPort("https", 443, "https"))
	lb.Spec.Type = core.ServiceTypeLoadBalancer
	lb.Status.LoadBalancer.Ingress = []core.LoadBalancerIngress{{IP: "203.0.113.10"}}
	c.add(
		&core.ConfigMap{ObjectMeta: objectMeta("ingress-nginx", "ingress-nginx-controller", nginxLabels), Data: map[string]string{"use-proxy-protocol": "true"}},
		deployment("ingress-nginx", "ingress-nginx-controller", nginxLabels, "/nginx-ingress-controller",
			"--publish-service=$(POD_NAMESPACE)/ingress-nginx-controller", "--election-id=ingress-nginx-leader",
			"--controller-class=k8s.io/ingress-nginx", "--ingress-class=nginx", "--configmap=$(POD_NAMESPACE)/ingress-nginx-controller"),
		lb,
		&networking.IngressClass{ObjectMeta: objectMeta("", "nginx", nil), Spec: networking.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}},
		ingress("default", "app", "nginx", "app.example.com"),
	)

	c.add(
		&gw.GatewayClass{ObjectMeta: objectMeta("", "eg", nil), Spec: gw.GatewayClassSpec{ControllerName: "gateway.envoyproxy.io/gatewayclass-controller"}},
		gateway("tenant", "gw", "eg", "*.tenant.org"),
		httpRoute("tenant", "shop", "gw", "shop.tenant.org"),
		object("gateway.envoyproxy.io/v1alpha1", "ClientTrafficPolicy", "tenant", "proxy-protocol", map[string]any{
			"targetRefs":    []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"}},
			"proxyProtocol": map[string]any{},
		}),
	)
	envoy := service("envoy-gateway-system", "envoy-tenant-gw-1a2b3c", map[string]string{"app.kubernetes.io/name": "envoy"}, "", port("http-80", 80, 10080))
	envoy.Labels = map[string]string{"gateway.envoyproxy.io/owning-gateway-name": "gw", "gateway.envoyproxy.io/owning-gateway-namespace": "tenant"}
	envoy.Spec.Type = core.ServiceTypeLoadBalancer
	envoy.Status.LoadBalancer.Ingress = []core.LoadBalancerIngress{{IP: "203.0.113.20"}}
	c.add(envoy)

	proxyMode := core.LoadBalancerIPModeProxy
	ngf := service("web", "edge-ngf", map[string]string{"app.kubernetes.io/name": "edge-ngf"}, "", port("http", 80, 80))
	ngf.Labels = map[string]string{"gateway.networking.k8s.io/gateway-name": "edge"}
	ngf.Spec.Type = core.ServiceTypeLoadBalancer
	ngf.Status.LoadBalancer.Ingress = []core.LoadBalancerIngress{{IP: "203.0.113.30", IPMode: &proxyMode}}
	ngfNS := gw.Namespace("nginx-gateway")
	c.add(
		&gw.GatewayClass{ObjectMeta: objectMeta("", "ngf", nil), Spec: gw.GatewayClassSpec{
			ControllerName: "gateway.nginx.org/nginx-gateway-controller",
			ParametersRef:  &gw.ParametersReference{Group: "gateway.nginx.org", Kind: "NginxProxy", Name: "ngf-proxy", Namespace: &ngfNS},
		}},
		object("gateway.nginx.org/v1alpha2", "NginxProxy", "nginx-gateway", "ngf-proxy", map[string]any{
			"rewriteClientIP": map[string]any{"mode": "ProxyProtocol"},
		}),
		gateway("web", "edge", "ngf", ""),
		ngf,
	)

	c.addTarget("ingress-nginx", "127.77.0.101", map[string]string{
		rules.ZonesAnnotation: "example.com", rules.IngressClassesAnnotation: "nginx",
	}, namedPort("http", 80, "8080"), namedPort("https", 443, "8443"))
	c.addTarget("tenant-gw", "127.77.0.102", map[string]string{
		rules.ZonesAnnotation: "tenant.org", rules.GatewaysAnnotation: "tenant/gw",
	}, namedPort("http", 80, "8081"))
	proxyLabels := map[string]string{"app.kubernetes.io/name": "hairpin-proxy", "app.kubernetes.io/instance": "hairpin"}
	for _, p := range []struct{ name, ip string }{{"hairpin-proxy-a", proxyA}, {"hairpin-proxy-b", proxyB}} {
		c.add(pod("hairpin-system", p.name, p.ip, proxyLabels, "ghcr.io/coredns-hairpin/hairpin-proxy:v0.1.0", 9090, []string{
			"--route=:8080=ingress-nginx-controller.ingress-nginx.svc.cluster.local.:80,name=ingress-nginx-http",
			"--route=:8443=ingress-nginx-controller.ingress-nginx.svc.cluster.local.:443,name=ingress-nginx-https",
			"--route=:8081=envoy-tenant-gw-1a2b3c.envoy-gateway-system.svc.cluster.local.:80,name=tenant-gw-http",
		}))
		c.metrics[p.ip+":9090"] = fixture("proxy.txt")
	}
	return c
}

// dnsOnlyCluster is a cluster with only its DNS: kube-dns running our
// CoreDNS (k3s's Corefile), with nothing to front and nothing installed.
func dnsOnlyCluster() *cluster {
	c := &cluster{metrics: map[string]string{}}
	dnsLabels := map[string]string{"k8s-app": "kube-dns"}
	c.add(
		service("kube-system", "kube-dns", dnsLabels, "", port("dns", 53, 53)),
		pod("kube-system", "coredns-a", corednsA, dnsLabels, "ghcr.io/coredns-hairpin/coredns:v0.1.0", 9153, nil),
		pod("kube-system", "coredns-b", corednsB, dnsLabels, "ghcr.io/coredns-hairpin/coredns:v0.1.0", 9153, nil),
	)
	c.metrics[corednsA+":9153"] = fixture("coredns.txt")
	c.metrics[corednsB+":9153"] = fixture("coredns.txt")
	mountCorefile(c, distributionCorefile("k3s"), nil)
	return c
}

// addTarget adds a target Service, its proxy pods' EndpointSlice (both
// proxy pods, ready) and nothing else: the pods are shared.
func (c *cluster) addTarget(name, clusterIP string, annotations map[string]string, ports ...core.ServicePort) {
	svc := service("hairpin-system", name, map[string]string{"app.kubernetes.io/name": "hairpin-proxy"}, clusterIP, ports...)
	svc.Labels = map[string]string{rules.TargetLabel: name}
	svc.Annotations = annotations
	ready := true
	es := &discovery.EndpointSlice{
		ObjectMeta:  objectMeta("hairpin-system", name+"-x7k2p", map[string]string{discovery.LabelServiceName: name}),
		AddressType: discovery.AddressTypeIPv4,
	}
	for _, p := range []struct{ name, ip string }{{"hairpin-proxy-a", proxyA}, {"hairpin-proxy-b", proxyB}} {
		es.Endpoints = append(es.Endpoints, discovery.Endpoint{
			Addresses:  []string{p.ip},
			Conditions: discovery.EndpointConditions{Ready: &ready},
			TargetRef:  &core.ObjectReference{Kind: "Pod", Namespace: "hairpin-system", Name: p.name},
		})
	}
	for _, p := range ports {
		es.Ports = append(es.Ports, discovery.EndpointPort{Name: &p.Name, Port: &p.TargetPort.IntVal})
	}
	c.add(svc, es)
}

func (c *cluster) add(objs ...client.Object) { c.objects = append(c.objects, objs...) }

// find returns the object of type T named namespace/name; it fails the test
// (through a nil dereference the caller would hit anyway) when there is none.
func find[T client.Object](t testing.TB, c *cluster, namespace, name string) T {
	t.Helper()
	for _, o := range c.objects {
		if obj, ok := o.(T); ok && o.GetNamespace() == namespace && o.GetName() == name {
			return obj
		}
	}
	var zero T
	t.Fatalf("the cluster has no %T %s/%s", zero, namespace, name)
	return zero
}

// remove drops the objects named namespace/name (of any kind).
func (c *cluster) remove(namespace, name string) {
	c.objects = slices.DeleteFunc(c.objects, func(o client.Object) bool {
		return o.GetNamespace() == namespace && o.GetName() == name
	})
}

func objectMeta(namespace, name string, labels map[string]string) meta.ObjectMeta {
	return meta.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}
}

func port(name string, port, target int32) core.ServicePort {
	return core.ServicePort{Name: name, Port: port, TargetPort: intstr.FromInt32(target), Protocol: core.ProtocolTCP}
}

// namedPort takes the targetPort as a string: a number, or a container
// port's name.
func namedPort(name string, port int32, target string) core.ServicePort {
	return core.ServicePort{Name: name, Port: port, TargetPort: intstr.Parse(target), Protocol: core.ProtocolTCP}
}

func service(namespace, name string, selector map[string]string, clusterIP string, ports ...core.ServicePort) *core.Service {
	return &core.Service{
		ObjectMeta: objectMeta(namespace, name, nil),
		Spec:       core.ServiceSpec{Selector: selector, ClusterIP: clusterIP, Ports: ports},
	}
}

func pod(namespace, name, ip string, labels map[string]string, image string, metricsPort int32, args []string) *core.Pod {
	return &core.Pod{
		ObjectMeta: objectMeta(namespace, name, labels),
		Spec: core.PodSpec{Containers: []core.Container{{
			Name: "main", Image: image, Args: args,
			Ports: []core.ContainerPort{{Name: "metrics", ContainerPort: metricsPort, Protocol: core.ProtocolTCP}},
		}}},
		Status: core.PodStatus{
			Phase: core.PodRunning, PodIP: ip, PodIPs: []core.PodIP{{IP: ip}},
			Conditions: []core.PodCondition{{Type: core.PodReady, Status: core.ConditionTrue}},
		},
	}
}

func deployment(namespace, name string, labels map[string]string, args ...string) *apps.Deployment {
	return &apps.Deployment{
		ObjectMeta: objectMeta(namespace, name, labels),
		Spec: apps.DeploymentSpec{
			Selector: &meta.LabelSelector{MatchLabels: labels},
			Template: core.PodTemplateSpec{
				ObjectMeta: meta.ObjectMeta{Labels: labels},
				Spec: core.PodSpec{Containers: []core.Container{{
					Name: "controller", Image: "registry.k8s.io/ingress-nginx/controller:v1.14.0", Args: args,
					Env: []core.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &core.EnvVarSource{FieldRef: &core.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
				}}},
			},
		},
	}
}

func ingress(namespace, name, class string, hosts ...string) *networking.Ingress {
	ing := &networking.Ingress{ObjectMeta: objectMeta(namespace, name, nil), Spec: networking.IngressSpec{IngressClassName: &class}}
	pathType := networking.PathTypePrefix
	for _, h := range hosts {
		ing.Spec.Rules = append(ing.Spec.Rules, networking.IngressRule{Host: h, IngressRuleValue: networking.IngressRuleValue{
			HTTP: &networking.HTTPIngressRuleValue{Paths: []networking.HTTPIngressPath{{
				Path: "/", PathType: &pathType,
				Backend: networking.IngressBackend{Service: &networking.IngressServiceBackend{Name: name, Port: networking.ServiceBackendPort{Number: 80}}},
			}}},
		}})
	}
	return ing
}

func gateway(namespace, name, class, hostname string) *gw.Gateway {
	l := gw.Listener{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}
	if hostname != "" {
		h := gw.Hostname(hostname)
		l.Hostname = &h
	}
	return &gw.Gateway{ObjectMeta: objectMeta(namespace, name, nil), Spec: gw.GatewaySpec{GatewayClassName: gw.ObjectName(class), Listeners: []gw.Listener{l}}}
}

func httpRoute(namespace, name, gatewayName string, hostnames ...string) *gw.HTTPRoute {
	r := &gw.HTTPRoute{ObjectMeta: objectMeta(namespace, name, nil)}
	r.Spec.ParentRefs = []gw.ParentReference{{Name: gw.ObjectName(gatewayName)}}
	for _, h := range hostnames {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gw.Hostname(h))
	}
	return r
}

// object is a custom resource of a CRD under testdata/crds.
func object(apiVersion, kind, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

var fixtures sync.Map

// fixture is a metrics file under testdata/metrics.
func fixture(name string) string {
	if v, ok := fixtures.Load(name); ok {
		return v.(string)
	}
	b, err := os.ReadFile(filepath.Join("testdata", "metrics", name))
	if err != nil {
		panic(err) // a test's own data file
	}
	fixtures.Store(name, string(b))
	return string(b)
}

// env is one control plane for a whole test, with the pod network that
// carries its pod proxy, and a client that writes the cases' objects.
type env struct {
	cp     *harness.ControlPlane
	pn     *harness.PodTunnel
	client client.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd")
	}
	pn := harness.StartPodTunnel(t)
	cp := harness.NewControlPlane(t, harness.ControlPlaneOptions{
		GatewayAPI:     harness.GatewayStandard,
		CRDDirs:        []string{filepath.Join("testdata", "crds")},
		APIServerFlags: pn.APIServerFlags(),
	})
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gw.Install} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &env{cp: cp, pn: pn, client: c}
}

// apply creates the cluster's objects (with their status), serves its
// metrics, and removes all of it when t ends, so that the next case starts
// from nothing.
func (e *env) apply(t *testing.T, c *cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var created []client.Object
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, o := range slices.Backward(created) {
			err := e.client.Delete(ctx, o, client.PropagationPolicy(meta.DeletePropagationBackground), client.GracePeriodSeconds(0))
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
			}
		}
		for _, o := range created {
			if err := harness.Poll(ctx, func(ctx context.Context) error { return gone(ctx, e.client, o) }); err != nil {
				t.Errorf("%T %s/%s is not gone: %v", o, o.GetNamespace(), o.GetName(), err)
			}
		}
	})
	namespaces := map[string]bool{}
	for _, o := range c.objects {
		if ns := o.GetNamespace(); ns != "" && !namespaces[ns] {
			namespaces[ns] = true
			err := e.client.Create(ctx, &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: ns}})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("namespace %s: %v", ns, err)
			}
		}
	}
	for _, o := range c.objects {
		o := o.DeepCopyObject().(client.Object)
		status := statusOf(o)
		if err := e.client.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
		}
		created = append(created, o)
		if status != nil {
			status(o)
			if err := e.client.Status().Update(ctx, o); err != nil {
				t.Fatalf("status of %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
			}
		}
	}
	for addr, text := range c.metrics {
		e.pn.Serve(t, addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write([]byte(text))
		}))
	}
}

// statusOf returns what puts back the status that Create drops, for the
// kinds whose status the checks read.
func statusOf(o client.Object) func(client.Object) {
	switch obj := o.(type) {
	case *core.Pod:
		s := obj.Status
		return func(o client.Object) { o.(*core.Pod).Status = s }
	case *core.Service:
		if len(obj.Status.LoadBalancer.Ingress) == 0 {
			return nil
		}
		s := obj.Status
		return func(o client.Object) { o.(*core.Service).Status = s }
	}
	return nil
}

// gone is nil once o no longer exists, and for a Service once its
// ClusterIPs are free again: the allocator releases them after the
// delete, and the next case asks for the same ones.
func gone(ctx context.Context, c client.Client, o client.Object) error {
	probes := []client.Object{o.DeepCopyObject().(client.Object)}
	if svc, ok := o.(*core.Service); ok {
		for _, ip := range svc.Spec.ClusterIPs {
			if ip != core.ClusterIPNone {
				probes = append(probes, &networking.IPAddress{ObjectMeta: meta.ObjectMeta{Name: ip}})
			}
		}
	}
	for _, p := range probes {
		err := c.Get(ctx, client.ObjectKeyFromObject(p), p)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return err
		}
		return fmt.Errorf("%T %s: %w", p, p.GetName(), errStillThere)
	}
	return nil
}

var errStillThere = errors.New("it still exists")

// clients reads the cluster as cfg's user, with metrics through the real
// pod proxy.
func clientsFor(t testing.TB, cfg *rest.Config) Clients {
	t.Helper()
	c, err := NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
