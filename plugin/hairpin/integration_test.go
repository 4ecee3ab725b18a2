package hairpin

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	core "k8s.io/api/core/v1"
	networking "k8s.io/api/networking/v1"
	rbac "k8s.io/api/rbac/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// TestIntegration runs the informer path against a real kube-apiserver and
// etcd. The subtests share one control plane and run in order: the Gateway
// API CRDs are installed halfway, while a cache is watching.
func TestIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: needs a real control plane")
	}
	cp := harness.NewControlPlane(t, harness.ControlPlaneOptions{})
	it := &integration{t: t, cp: cp, kube: cp.Clientset}
	it.run("SyncThenAnswer", it.syncThenAnswer)
	it.run("CreateUpdateDeleteReflected", it.createUpdateDelete)
	it.run("IngressClassChangeAndDefaultFlip", it.classes)
	it.run("NamespaceAndLabelFilters", it.filters)
	it.run("ProxyServiceRecreatedWithNewClusterIP", it.proxyRecreated)
	it.run("NoGatewayCRDsReadyOnIngressAloneThenCRDsPickedUp", it.gatewayCRDsLate)
	it.run("GatewayRoutesAttachAndReparent", it.gatewayRoutes)
	it.run("APIServerDownServesLastKnownThenCatchesUp", it.apiserverRestart)
	it.run("TargetsAppearChangeAndGoLive", it.targetsLive)
	it.run("TargetTakesHostsOnceItsServiceHasAReadyEndpoint", it.targetsWaitForEndpoints)
	it.run("DirectTargetsFollowTheirNamedService", it.directTargets)
	it.run("GatewayRBACMissingIngressHostsStillServed", it.gatewayForbidden)
	it.run("NotReadyUntilSyncOrStartupTimeout", it.notReadyBeforeSync)
}

type integration struct {
	t    *testing.T
	cp   *harness.ControlPlane
	kube kubernetes.Interface
	n    int
}

func (it *integration) run(name string, f func(t *testing.T, ns string)) {
	it.n++
	ns := fmt.Sprintf("it-%d", it.n)
	it.t.Run(name, func(t *testing.T) {
		it.createNamespace(t, ns)
		f(t, ns)
	})
}

func (it *integration) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (it *integration) createNamespace(t *testing.T, ns string) {
	t.Helper()
	if _, err := it.kube.CoreV1().Namespaces().Create(it.ctx(t), &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: ns}}, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startCache starts a cache through the plugin's own client construction
// (kubeconfig, protobuf) and stops it before the test ends, so the apiserver
// is never left waiting on a watch.
func (it *integration) startCache(t *testing.T, s settings) *hostCache {
	t.Helper()
	if s.kubeconfig == "" {
		s.kubeconfig = it.cp.Kubeconfig
	}
	if s.startupTimeout == 0 {
		s.startupTimeout = 20 * time.Second
	}
	if s.zones == nil {
		s.zones = []string{"example.com."}
	}
	if s.labels == nil {
		s.labels = labels.Everything()
	}
	newClients, err := clientFactory(s)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newClients()
	if err != nil {
		t.Fatal(err)
	}
	// CRDs installed mid-test are looked for often.
	s.discoveryInterval = 200 * time.Millisecond
	hc := newHostCache(c, s)
	if err := hc.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.stop)
	return hc
}

func (it *integration) syncedCache(t *testing.T, s settings) *hostCache {
	t.Helper()
	hc := it.startCache(t, s)
	if !hc.waitOpen(20 * time.Second) {
		t.Fatal("cache did not sync against the real apiserver")
	}
	return hc
}

// createProxy creates the proxy Service in ns and returns its ClusterIP, a
// loopback address from the harness's service range.
func (it *integration) createProxy(t *testing.T, ns string) string {
	t.Helper()
	svc := &core.Service{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "hairpin-proxy"},
		Spec:       core.ServiceSpec{Ports: []core.ServicePort{{Name: "http", Port: 80}}},
	}
	created, err := it.kube.CoreV1().Services(ns).Create(it.ctx(t), svc, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(created.Spec.ClusterIP); ip == nil || !ip.IsLoopback() {
		t.Fatalf("proxy ClusterIP %q is not a loopback address", created.Spec.ClusterIP)
	}
	return created.Spec.ClusterIP
}

func (it *integration) proxySettings(ns string) settings {
	return settings{proxyNamespace: ns, proxyName: "hairpin-proxy"}
}

func (it *integration) createIngress(t *testing.T, ing *networking.Ingress) {
	t.Helper()
	if _, err := it.kube.NetworkingV1().Ingresses(ing.Namespace).Create(it.ctx(t), ing, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// wantA polls the handler until qname answers A with want ("" for a pass to
// the next plugin).
func wantA(t *testing.T, hc *hostCache, qname, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := answerA(hc, qname)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s A: got %q, want %q", qname, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// answerA is the one A record the handler answers qname with, "" for a
// pass to the next plugin.
func answerA(hc *hostCache, qname string) string {
	h := newTestHairpin(hc, []string{"example.com."})
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	h.ServeDNS(context.Background(), rec, test.Case{Qname: qname, Qtype: dns.TypeA}.Msg())
	if rec.Msg != nil && len(rec.Msg.Answer) == 1 {
		if a, ok := rec.Msg.Answer[0].(*dns.A); ok {
			return a.A.String()
		}
	}
	return ""
}

func (it *integration) syncThenAnswer(t *testing.T, ns string) {
	ip := it.createProxy(t, ns)
	it.createIngress(t, ingress(ns, "app", "", "app.example.com"))
	hc := it.syncedCache(t, it.proxySettings(ns))
	wantA(t, hc, "app.example.com.", ip)
	wantA(t, hc, "unknown.example.com.", "")
}

func (it *integration) createUpdateDelete(t *testing.T, ns string) {
	ip := it.createProxy(t, ns)
	hc := it.syncedCache(t, it.proxySettings(ns))
	ctx := it.ctx(t)
	ings := it.kube.NetworkingV1().Ingresses(ns)

	it.createIngress(t, ingress(ns, "app", "", "new.example.com"))
	wantA(t, hc, "new.example.com.", ip)

	cur, err := ings.Get(ctx, "app", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Rules[0].Host = "renamed.example.com"
	if _, err := ings.Update(ctx, cur, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantA(t, hc, "renamed.example.com.", ip)
	wantA(t, hc, "new.example.com.", "")

	if err := ings.Delete(ctx, "app", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantA(t, hc, "renamed.example.com.", "")
}

func (it *integration) classes(t *testing.T, ns string) {
	ip := it.createProxy(t, ns)
	ctx := it.ctx(t)
	classes := it.kube.NetworkingV1().IngressClasses()
	mk := func(name string, isDefault bool) *networking.IngressClass {
		ic := &networking.IngressClass{ObjectMeta: meta.ObjectMeta{Name: name}, Spec: networking.IngressClassSpec{Controller: "example.com/" + name}}
		if isDefault {
			ic.Annotations = map[string]string{rules.DefaultIngressClassAnnotation: "true"}
		}
		return ic
	}
	nginxClass, otherClass := ns+"-nginx", ns+"-other"
	setDefault := func(name string, isDefault bool) {
		t.Helper()
		ic, err := classes.Get(ctx, name, meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ic.Annotations = mk(name, isDefault).Annotations
		if _, err := classes.Update(ctx, ic, meta.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// No default yet: the apiserver's DefaultIngressClass admission would
	// otherwise write the default into the new Ingress, and it would no
	// longer follow the default.
	for _, ic := range []*networking.IngressClass{mk(nginxClass, false), mk(otherClass, false)} {
		if _, err := classes.Create(ctx, ic, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, n := range []string{nginxClass, otherClass} {
			classes.Delete(context.Background(), n, meta.DeleteOptions{})
		}
	})
	it.createIngress(t, ingress(ns, "mine", nginxClass, "mine.example.com"))
	it.createIngress(t, ingress(ns, "unnamed", "", "unnamed.example.com"))
	setDefault(otherClass, true)
	s := it.proxySettings(ns)
	s.ingressClasses = []string{nginxClass}
	hc := it.syncedCache(t, s)
	wantA(t, hc, "mine.example.com.", ip)
	wantA(t, hc, "unnamed.example.com.", "")

	// Flip the default class: the Ingress without a class follows it.
	setDefault(otherClass, false)
	setDefault(nginxClass, true)
	wantA(t, hc, "unnamed.example.com.", ip)

	// Change the class of an Ingress.
	ing, err := it.kube.NetworkingV1().Ingresses(ns).Get(ctx, "mine", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing.Spec.IngressClassName = &otherClass
	if _, err := it.kube.NetworkingV1().Ingresses(ns).Update(ctx, ing, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantA(t, hc, "mine.example.com.", "")
}

func (it *integration) filters(t *testing.T, ns string) {
	ip := it.createProxy(t, ns)
	other := ns + "-other"
	it.createNamespace(t, other)
	on := func(ing *networking.Ingress) *networking.Ingress {
		ing.Labels = map[string]string{"hairpin": "on"}
		return ing
	}
	it.createIngress(t, on(ingress(ns, "in", "", "in.example.com")))
	it.createIngress(t, ingress(ns, "unlabelled", "", "unlabelled.example.com"))
	it.createIngress(t, on(ingress(other, "elsewhere", "", "elsewhere.example.com")))
	sel, err := labels.Parse("hairpin=on")
	if err != nil {
		t.Fatal(err)
	}
	s := it.proxySettings(ns)
	s.namespaces = []string{ns}
	s.labels = sel
	hc := it.syncedCache(t, s)
	wantA(t, hc, "in.example.com.", ip)
	wantA(t, hc, "unlabelled.example.com.", "")
	wantA(t, hc, "elsewhere.example.com.", "")

	// Labelling the Ingress brings it in; unlabelling takes it out.
	ctx := it.ctx(t)
	ing, err := it.kube.NetworkingV1().Ingresses(ns).Get(ctx, "unlabelled", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing.Labels = map[string]string{"hairpin": "on"}
	if _, err := it.kube.NetworkingV1().Ingresses(ns).Update(ctx, ing, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantA(t, hc, "unlabelled.example.com.", ip)
}

func (it *integration) proxyRecreated(t *testing.T, ns string) {
	first := it.createProxy(t, ns)
	it.createIngress(t, ingress(ns, "app", "", "app.example.com"))
	hc := it.syncedCache(t, it.proxySettings(ns))
	wantA(t, hc, "app.example.com.", first)

	if err := it.kube.CoreV1().Services(ns).Delete(it.ctx(t), "hairpin-proxy", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantA(t, hc, "app.example.com.", "") // no proxy: passed to the next plugin
	second := it.createProxy(t, ns)
	if second == first {
		t.Fatalf("recreated Service kept ClusterIP %s; the test cannot tell them apart", first)
	}
	wantA(t, hc, "app.example.com.", second)
}

func (it *integration) gatewayCRDsLate(t *testing.T, ns string) {
	ip := it.createProxy(t, ns)
	it.createIngress(t, ingress(ns, "app", "", "ingress.example.com"))
	s := it.proxySettings(ns)
	s.gatewayClasses = []string{"*"}
	hc := it.syncedCache(t, s)
	wantA(t, hc, "ingress.example.com.", ip)

	dir, err := harness.GatewayAPICRDDir(harness.GatewayStandard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(it.cp.Config, envtest.CRDInstallOptions{Paths: []string{dir}}); err != nil {
		t.Fatalf("installing Gateway API CRDs: %v", err)
	}
	eventually(t, "Gateway API kinds to be watched", func() bool {
		k := hc.gatewayKindsStarted()
		return k["gateway"] == "v1" && k["httproute"] == "v1" && k["grpcroute"] == "v1" && k["tlsroute"] == "v1"
	})
	g := gateway(ns, "late", "any", listener("https", "late-gw.example.com", ""))
	if _, err := gatewayClientFor(t, it.cp).GatewayV1().Gateways(ns).Create(it.ctx(t), g, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantA(t, hc, "late-gw.example.com.", ip)
}

func (it *integration) gatewayRoutes(t *testing.T, ns string) {
	ip := it.createProxy(t, ns)
	client := gatewayClientFor(t, it.cp)
	ctx := it.ctx(t)
	infra := ns + "-infra"
	it.createNamespace(t, infra)
	for _, g := range []*gw.Gateway{
		gateway(infra, "public", "cilium", listener("https", "", gw.NamespacesFromAll), listener("apps", "*.apps.example.com", gw.NamespacesFromAll)),
		gateway(infra, "internal", "istio", listener("https", "", gw.NamespacesFromAll)),
	} {
		if _, err := client.GatewayV1().Gateways(infra).Create(ctx, g, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	routes := client.GatewayV1().HTTPRoutes(ns)
	for _, r := range []*gw.HTTPRoute{
		httpRoute(ns, "attached", hostnames("route.example.com"), parentRef(infra, "public", "https")),
		httpRoute(ns, "section", hostnames("x.apps.example.com", "y.example.com"), parentRef(infra, "public", "apps")),
		httpRoute(ns, "other-class", hostnames("istio.example.com"), parentRef(infra, "internal", "")),
	} {
		if _, err := routes.Create(ctx, r, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grpc := &gw.GRPCRoute{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "grpc"}}
	grpc.Spec.Hostnames = hostnames("grpc.example.com")
	grpc.Spec.ParentRefs = []gw.ParentReference{parentRef(infra, "public", "https")}
	if _, err := client.GatewayV1().GRPCRoutes(ns).Create(ctx, grpc, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := it.proxySettings(ns)
	s.gatewayClasses = []string{"cilium"}
	s.namespaces = []string{ns, infra}
	hc := it.syncedCache(t, s)
	wantA(t, hc, "route.example.com.", ip)
	wantA(t, hc, "grpc.example.com.", ip)
	wantA(t, hc, "x.apps.example.com.", ip)
	wantA(t, hc, "y.example.com.", "")
	wantA(t, hc, "istio.example.com.", "")

	// Re-parent onto the served Gateway.
	r, err := routes.Get(ctx, "other-class", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Spec.ParentRefs = []gw.ParentReference{parentRef(infra, "public", "")}
	if _, err := routes.Update(ctx, r, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantA(t, hc, "istio.example.com.", ip)

	// The parent changes class: its routes go.
	g, err := client.GatewayV1().Gateways(infra).Get(ctx, "public", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.Spec.GatewayClassName = "istio"
	if _, err := client.GatewayV1().Gateways(infra).Update(ctx, g, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantA(t, hc, "route.example.com.", "")
	wantA(t, hc, "istio.example.com.", "")
}

func (it *integration) apiserverRestart(t *testing.T, ns string) {
	ip := it.createProxy(t, ns)
	it.createIngress(t, ingress(ns, "before", "", "before.example.com"))
	hc := it.syncedCache(t, it.proxySettings(ns))
	wantA(t, hc, "before.example.com.", ip)

	if err := it.cp.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	// Give the watches time to notice, then the last-known answer must stand.
	time.Sleep(2 * time.Second)
	wantA(t, hc, "before.example.com.", ip)
	if !hc.serving() {
		t.Error("cache reports unsynced while serving last-known answers")
	}

	if err := it.cp.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	it.createIngress(t, ingress(ns, "after", "", "after.example.com"))
	wantA(t, hc, "after.example.com.", ip)
}

func (it *integration) notReadyBeforeSync(t *testing.T, ns string) {
	it.createProxy(t, ns)
	if err := it.cp.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			it.cp.StartAPIServer()
		}
	})
	s := it.proxySettings(ns)
	s.startupTimeout = 2 * time.Second
	hc := it.startCache(t, s)
	h := newTestHairpin(hc, []string{"example.com."})
	if h.Ready() {
		t.Fatal("Ready() with the apiserver down, before the first sync and before startup_timeout")
	}
	// An unreachable apiserver must not keep CoreDNS out of the Service
	// endpoints: after startup_timeout the plugin is Ready and passes
	// through.
	if !hc.waitOpen(10*time.Second) || !h.Ready() {
		t.Fatal("not Ready after startup_timeout with the apiserver down")
	}
	if err := it.cp.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	it.createIngress(t, ingress(ns, "late", "", "late.example.com"))
	wantA(t, hc, "late.example.com.", it.serviceIP(t, ns, "hairpin-proxy"))
}

func (it *integration) serviceIP(t *testing.T, ns, name string) string {
	t.Helper()
	svc, err := it.kube.CoreV1().Services(ns).Get(it.ctx(t), name, meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

// createTarget creates a discovered target Service in ns and returns its
// ClusterIP.
func (it *integration) createTarget(t *testing.T, ns, name string, ann map[string]string) string {
	t.Helper()
	svc := &core.Service{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{rules.TargetLabel: ""}, Annotations: ann},
		Spec:       core.ServiceSpec{Ports: []core.ServicePort{{Name: "http", Port: 80}}},
	}
	created, err := it.kube.CoreV1().Services(ns).Create(it.ctx(t), svc, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Its proxy is up: the target takes hosts as soon as it is seen.
	if err := harness.ServeEndpoints(it.ctx(t), it.kube, created); err != nil {
		t.Fatal(err)
	}
	return created.Spec.ClusterIP
}

func (it *integration) targetsLive(t *testing.T, ns string) {
	tenant := ns + "-tenant"
	it.createNamespace(t, tenant)
	root := it.createTarget(t, ns, "root", map[string]string{rules.ZonesAnnotation: "example.com", rules.IngressClassesAnnotation: "tenant-root"})
	it.createIngress(t, ingress(tenant, "dash", "tenant-root", "dash.example.com"))
	it.createIngress(t, ingress(tenant, "app", "tenant-a", "app.a.example.com"))
	it.createIngress(t, ingress(tenant, "foreign", "tenant-a", "login.example.org"))
	s := settings{zones: []string{"."}, targetsNamespace: ns, namespaces: []string{tenant}}
	hc := it.syncedCache(t, s)
	wantA(t, hc, "dash.example.com.", root)
	wantA(t, hc, "app.a.example.com.", "") // no target for tenant-a yet

	a := it.createTarget(t, ns, "tenant-a", map[string]string{rules.ZonesAnnotation: "a.example.com", rules.IngressClassesAnnotation: "tenant-a"})
	wantA(t, hc, "app.a.example.com.", a)
	wantA(t, hc, "login.example.org.", "") // outside tenant-a's zones
	wantA(t, hc, "dash.example.com.", root)

	// Re-annotated: tenant-a now also takes tenant-root's class, but the
	// more specific class match is the same rank, so the first name wins:
	// root.
	svcs := it.kube.CoreV1().Services(ns)
	svc, err := svcs.Get(it.ctx(t), "tenant-a", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Annotations[rules.ZonesAnnotation] = "example.com"
	svc.Annotations[rules.IngressClassesAnnotation] = "tenant-a,tenant-root"
	if _, err := svcs.Update(it.ctx(t), svc, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantA(t, hc, "dash.example.com.", root)
	wantA(t, hc, "app.a.example.com.", a)

	if err := svcs.Delete(it.ctx(t), "tenant-a", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantA(t, hc, "app.a.example.com.", "")
	wantA(t, hc, "dash.example.com.", root)
}

// gatewayForbidden runs the plugin as a user that may read Ingresses and
// Services but not the Gateway API, with the CRDs installed.
func (it *integration) gatewayForbidden(t *testing.T, ns string) {
	ip := it.createProxy(t, ns)
	it.createIngress(t, ingress(ns, "app", "", "app.example.com"))
	kubeconfig, _, err := it.cp.UserKubeconfig("hairpin-no-gateway-" + ns)
	if err != nil {
		t.Fatal(err)
	}
	it.grantRead(t, "hairpin-no-gateway-"+ns, "networking.k8s.io", "ingresses", "ingressclasses")
	it.grantRead(t, "hairpin-no-gateway-"+ns, "", "services")
	s := it.proxySettings(ns)
	s.kubeconfig = kubeconfig
	s.gatewayClasses = []string{"*"}
	s.startupTimeout = time.Second
	hc := it.startCache(t, s)
	h := newTestHairpin(hc, []string{"example.com."})
	if !hc.waitOpen(15*time.Second) || !h.Ready() {
		t.Fatal("not Ready after startup_timeout with the Gateway API forbidden")
	}
	wantA(t, hc, "app.example.com.", ip)
	eventually(t, "forbidden Gateway lists counted", func() bool {
		return testutil.ToFloat64(watchErrors.WithLabelValues(hc.id, "gateway", "forbidden")) > 0
	})
}

// grantRead binds user to get/list/watch on resources cluster-wide.
func (it *integration) grantRead(t *testing.T, user, group string, resources ...string) {
	t.Helper()
	name := user + "-" + strings.ReplaceAll(group, ".", "-") + "-read"
	role := &rbac.ClusterRole{
		ObjectMeta: meta.ObjectMeta{Name: name},
		Rules:      []rbac.PolicyRule{readRule(group, resources...)},
	}
	if _, err := it.kube.RbacV1().ClusterRoles().Create(it.ctx(t), role, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbac.ClusterRoleBinding{
		ObjectMeta: meta.ObjectMeta{Name: name},
		RoleRef:    rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbac.Subject{{Kind: rbac.UserKind, APIGroup: rbac.GroupName, Name: user}},
	}
	if _, err := it.kube.RbacV1().ClusterRoleBindings().Create(it.ctx(t), binding, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// readRule grants get/list/watch on resources of group.
func readRule(group string, resources ...string) rbac.PolicyRule {
	return rbac.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: []string{"get", "list", "watch"}}
}

func gatewayClientFor(t *testing.T, cp *harness.ControlPlane) gwclient.Interface {
	t.Helper()
	c, err := gwclient.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
