package e2e_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// The targets picture, after Cozystack: a root ingress and a tenant's
// ingress, each an ingress-nginx with use-proxy-protocol on its own class,
// zone and LoadBalancer IP; a Gateway on a data plane of its own, also behind
// PROXY; and a legacy controller that does not speak PROXY at all.
const (
	rootZone    = "example.com"    // tenant-root's target may answer here
	tenantZone  = "a.example.org"  // tenant-a's target may answer here
	gatewayZone = "gw.example.com" // the Gateway target's zone

	rootHost   = "www.example.com"    // Ingress of class tenant-root
	tenantHost = "shop.a.example.org" // Ingress of class tenant-a
	// hijackHost is tenant-a's Ingress for a name in the root zone: outside
	// its target's zones, so it must pass through to the public answer.
	hijackHost = "hijack.example.com"
	// legacyHost is an Ingress of class legacy, which no target selects.
	legacyHost = "legacy.example.com"
	// routeHost is an HTTPRoute on Gateway targets-gw/public, which the
	// gateway target selects by name.
	routeHost = "shop.gw.example.com"
	// unselectedRouteHost is an HTTPRoute on Gateway targets-gw/internal, of
	// the same class, which no target selects.
	unselectedRouteHost = "internal.gw.example.com"

	gatewayNamespace = "targets-gw"
	// brokenTarget is a target Service whose zones annotation has a typo.
	brokenTarget = "broken"
)

// controller is one ingress controller of the picture: an nginx on its own
// "LoadBalancer IP" and, when it speaks PROXY, the target Service (in
// hairpin-system) that fronts it.
type controller struct {
	// name is the IngressClass and the target Service's name.
	name  string
	nginx *harness.Nginx
	// lb is the LoadBalancer IP: what the public DNS answers for the
	// controller's names. port is nginx's HTTP port on it.
	lb   netip.Addr
	port int
	// target is the target Service's ClusterIP; invalid for the legacy
	// controller, which no target fronts.
	target netip.Addr
}

// targetsStack is every controller, the public DNS, one hairpin-proxy for
// every target, and our CoreDNS with the bare `hairpin` line.
type targetsStack struct {
	cp                            *harness.ControlPlane
	root, tenant, gateway, legacy *controller
	// publicDNS is the public DNS stand-in; clusterDNS our CoreDNS's
	// kubeadm-shaped block and uncached its second block without cache.
	publicDNS, clusterDNS, uncached string
	// coredns is our CoreDNS; metricsURL its prometheus endpoint.
	coredns    *harness.Process
	metricsURL string
}

// controllers returns every controller, for "nobody else saw it" checks.
func (s *targetsStack) controllers() []*controller {
	return []*controller{s.root, s.tenant, s.gateway, s.legacy}
}

// startTargets starts the targets picture for t and returns once CoreDNS
// answers every selected host with its target.
func startTargets(t *testing.T) (context.Context, *targetsStack) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	coredns := harness.RequireBinary(t, "coredns")
	proxyBin := harness.RequireBinary(t, "hairpin-proxy")
	s := &targetsStack{cp: controlPlane(t)}
	dir := t.TempDir()

	s.root = startController(t, "tenant-root", true)
	s.tenant = startController(t, "tenant-a", true)
	s.gateway = startController(t, "gateway", true)
	s.legacy = startController(t, "legacy", false)

	// The public DNS: the root zone on the root LB but for the legacy
	// controller's name and the Gateway's subzone; the tenant's zone on its
	// own LB.
	s.publicDNS = harness.FreeAddr(t, "127.0.0.1")
	rootFile := harness.WriteFile(t, dir, rootZone+".zone", e2e.ZoneText(rootZone, s.root.lb,
		"legacy IN A "+s.legacy.lb.String(),
		"*.gw   IN A "+s.gateway.lb.String()))
	tenantFile := harness.WriteFile(t, dir, tenantZone+".zone", e2e.ZoneText(tenantZone, s.tenant.lb))
	publicConf := harness.WriteFile(t, dir, "Corefile.public", e2e.PublicCorefile(s.publicDNS,
		e2e.ZoneFile{Zone: rootZone, Path: rootFile}, e2e.ZoneFile{Zone: tenantZone, Path: tenantFile}))
	public := harness.StartProcess(t, "public-dns", coredns, "-conf", publicConf)
	public.RequireReady(ctx, 30*time.Second, harness.DNSProbe(s.publicDNS, rootZone, dns.TypeSOA))

	// The targets, as an operator annotates them; container ports 8080-8082
	// are where a proxy Pod would listen for each upstream. They go with
	// the test: the package's tests share the control plane, and every
	// CoreDNS our image activates discovers what hairpin-system holds.
	t.Cleanup(func() {
		for _, name := range []string{s.root.name, s.tenant.name, s.gateway.name, brokenTarget} {
			if err := e2e.DeleteTarget(context.Background(), s.cp, name); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	var err error
	for _, c := range []struct {
		ctl  *controller
		port int32
		ann  map[string]string
	}{
		{s.root, 8080, map[string]string{e2e.ZonesAnnotation: rootZone, e2e.IngressClassesAnnotation: "tenant-root"}},
		{s.tenant, 8081, map[string]string{e2e.ZonesAnnotation: tenantZone, e2e.IngressClassesAnnotation: "tenant-a"}},
		{s.gateway, 8082, map[string]string{e2e.ZonesAnnotation: gatewayZone, e2e.GatewaysAnnotation: gatewayNamespace + "/public"}},
	} {
		if c.ctl.target, err = e2e.CreateTarget(ctx, s.cp, c.ctl.name, c.port, c.ann); err != nil {
			t.Fatal(err)
		}
	}
	// A typo in one target's annotations (an empty zone) disables that
	// target only. It would take the legacy class if it were enabled.
	if _, err := e2e.CreateTarget(ctx, s.cp, brokenTarget, 8083, map[string]string{
		e2e.ZonesAnnotation: rootZone + ",," + tenantZone, e2e.IngressClassesAnnotation: s.legacy.name,
	}); err != nil {
		t.Fatal(err)
	}

	// What tenants and the platform create.
	for _, ing := range []struct{ ns, name, class, host string }{
		{"tenant-root", "www", "tenant-root", rootHost},
		{"tenant-a", "shop", "tenant-a", tenantHost},
		{"tenant-a", "hijack", "tenant-a", hijackHost},
		{"legacy", "legacy", "legacy", legacyHost},
	} {
		if _, err := e2e.CreateIngressOfClass(ctx, s.cp, ing.ns, ing.name, ing.class, ing.host); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []struct{ name, host string }{{"public", routeHost}, {"internal", unselectedRouteHost}} {
		if err := e2e.CreateGatewayRouteOfClass(ctx, s.cp, e2e.GatewayClass, gatewayNamespace, r.name, r.host); err != nil {
			t.Fatal(err)
		}
	}

	// One hairpin-proxy for every target. In a cluster kube-proxy forwards
	// each target's ClusterIP:80 to the proxy Pod's port for that target;
	// nothing does that here, so each route listens on the ClusterIP:80
	// itself. The header port is the port the client dialled.
	health := harness.FreeAddr(t, "127.0.0.1")
	args := []string{"--health-addr", health, "--lameduck", "0s", "--drain-timeout", "1s"}
	for _, c := range []*controller{s.root, s.tenant, s.gateway} {
		args = append(args, "--route", fmt.Sprintf("%s=%s,header-port=80,name=%s",
			net.JoinHostPort(c.target.String(), "80"), c.nginx.HTTPAddr, c.name))
	}
	proxy := harness.StartProcess(t, "hairpin-proxy", proxyBin, args...)
	proxy.RequireReady(ctx, 30*time.Second, harness.HTTPProbe("http://"+health+"/readyz"))

	// Our CoreDNS, kubeadm's Corefile plus the one line `hairpin`: discover
	// the targets in hairpin-system, through $KUBECONFIG as it runs outside
	// a cluster. A second block without cache shares the same watch, so that
	// waiting does not put public answers into the first block's cache.
	cfg := e2e.CorefileConfig{
		Listen: harness.FreeAddr(t, "127.0.0.1"), Health: harness.FreeAddr(t, "127.0.0.1"), Ready: harness.FreeAddr(t, "127.0.0.1"),
		Kubeconfig: s.cp.Kubeconfig, Upstream: s.publicDNS,
		Hairpin: "hairpin", Uncached: harness.FreeAddr(t, "127.0.0.1"), Metrics: harness.FreeAddr(t, "127.0.0.1"),
	}
	s.clusterDNS, s.uncached, s.metricsURL = cfg.Listen, cfg.Uncached, "http://"+cfg.Metrics+"/metrics"
	cmd := exec.Command(coredns, "-conf", harness.WriteFile(t, dir, "Corefile", e2e.Corefile(cfg)))
	// The plugin prefers the in-cluster config when KUBERNETES_SERVICE_HOST
	// is set, as it is when the tests themselves run in a Pod.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "KUBERNETES_SERVICE_HOST=") })
	cmd.Env = append(cmd.Env, "KUBECONFIG="+s.cp.Kubeconfig)
	s.coredns = harness.StartCmd(t, "coredns-targets", cmd)
	s.coredns.RequireReady(ctx, 30*time.Second, harness.HTTPProbe("http://"+cfg.Ready+"/ready"))
	for _, addr := range []string{s.clusterDNS, s.uncached} {
		s.coredns.RequireReady(ctx, 30*time.Second, harness.DNSProbe(addr, rootZone, dns.TypeSOA))
	}
	for host, want := range map[string]netip.Addr{rootHost: s.root.target, tenantHost: s.tenant.target, routeHost: s.gateway.target} {
		if err := harness.Poll(within(ctx, t, 10*time.Second), harness.AProbe(s.uncached, host, want)); err != nil {
			t.Fatalf("%v\n%s", err, s.coredns.Output())
		}
	}
	t.Logf("targets: tenant-root %s (LB %s), tenant-a %s (LB %s), gateway %s (LB %s), legacy LB %s; public DNS %s, cluster DNS %s",
		s.root.target, s.root.lb, s.tenant.target, s.tenant.lb, s.gateway.target, s.gateway.lb, s.legacy.lb, s.publicDNS, s.clusterDNS)
	return ctx, s
}

// startController starts an nginx on a fresh LoadBalancer IP, on port 80
// where it can bind it; proxyProtocol says whether it requires the header.
func startController(t *testing.T, name string, proxyProtocol bool) *controller {
	t.Helper()
	c := &controller{name: name, lb: harness.FreeLoopbackIP(t)}
	opts := harness.NginxOptions{Name: "nginx-" + name, IP: c.lb, WithoutProxyProtocol: !proxyProtocol}
	if harness.CanListen(c.lb, 80) {
		opts.HTTPPort = 80
	}
	c.nginx = harness.StartNginx(t, opts)
	c.port = harness.PortOf(t, c.nginx.HTTPAddr)
	return c
}
