package kubectlhairpin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apps "k8s.io/api/apps/v1"
	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	rbac "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
)

// checkCase is one state of the cluster and what one check id says of it.
type checkCase struct {
	id   string
	name string
	want Status
	// contains is a piece of the message (or hint) of the worst check of id.
	contains string
	change   func(t *testing.T, c *cluster)
	// as runs the check as a user with these rules instead of the admin.
	as func(testing.TB) []rbac.PolicyRule
}

// checkCases has, for every check id, at least one state where it passes
// and one where it does not; healthyCluster is the passing state of all.
var checkCases = []checkCase{
	{id: idClusterAccess, name: "AdminMayReadEverything", want: OK, contains: "every read was allowed"},
	{id: idClusterAccess, name: "DeniedListIsReportedWithItsImpact", want: Warn, contains: "may not list deployments.apps in all namespaces",
		as: withoutGroup("apps")},

	{id: idCoreDNSPods, name: "ReadyPodsBehindKubeDNS", want: OK, contains: "2/2 pods ready"},
	{id: idCoreDNSPods, name: "NamesTheDeploymentAsTheDistributionDoes", want: OK, contains: "image ghcr.io/coredns-hairpin/coredns:v0.1.0 (deployment/kube-system/coredns)", change: func(t *testing.T, c *cluster) {
		c.add(deployment("kube-system", "coredns", map[string]string{"k8s-app": "kube-dns"}))
	}},
	{id: idCoreDNSPods, name: "NoKubeDNSService", want: Fail, contains: "does not exist", change: func(t *testing.T, c *cluster) {
		c.remove("kube-system", "kube-dns")
	}},
	{id: idCoreDNSPods, name: "NoPodReady", want: Fail, contains: "0/2 pods ready", change: func(t *testing.T, c *cluster) {
		for _, name := range []string{"coredns-a", "coredns-b"} {
			find[*core.Pod](t, c, "kube-system", name).Status.Conditions = nil
		}
	}},

	{id: idCoreDNSMetrics, name: "ReadThroughThePodProxy", want: OK, contains: "read the metrics of 2/2 CoreDNS pods"},
	{id: idCoreDNSMetrics, name: "PodUnreachable", want: Warn, contains: "could not read the metrics of 2 of 2", change: func(t *testing.T, c *cluster) {
		delete(c.metrics, corednsA+":9153")
		delete(c.metrics, corednsB+":9153")
	}},
	{id: idCoreDNSMetrics, name: "PodsProxyForbidden", want: Warn, contains: "get pods/proxy in kube-system is forbidden",
		as: withoutResource("pods/proxy")},

	{id: idCoreDNSImage, name: "OurImage", want: OK, contains: "CoreDNS runs a hairpin build"},
	{id: idCoreDNSImage, name: "StockImageWithoutHairpinMetrics", want: Fail, contains: "registry.k8s.io/coredns/coredns:v1.12.0", change: func(t *testing.T, c *cluster) {
		for _, name := range []string{"coredns-a", "coredns-b"} {
			find[*core.Pod](t, c, "kube-system", name).Spec.Containers[0].Image = "registry.k8s.io/coredns/coredns:v1.12.0"
		}
		stock := stockCoreDNS()
		c.metrics[corednsA+":9153"], c.metrics[corednsB+":9153"] = stock, stock
	}},

	{id: idCoreDNSImage, name: "StockImageWhereNoControllerNeedsHairpin", want: OK, contains: "CoreDNS runs no hairpin build (coredns-a (registry.k8s.io/coredns/coredns:v1.12.0), coredns-b (registry.k8s.io/coredns/coredns:v1.12.0)), and needs none: no controller that requires PROXY has an address the dataplane short-circuits", change: stockCoreDNSWhereNothingNeedsHairpin},
	{id: idCoreDNSActivation, name: "InactiveWhereNoControllerNeedsHairpin", want: OK, contains: "and needs not be: no controller that requires PROXY", change: stockCoreDNSWhereNothingNeedsHairpin},
	{id: idCoreDNSKinds, name: "NoKindWhereNoControllerNeedsHairpin", want: OK, contains: "hairpin watches no kind, and needs not", change: stockCoreDNSWhereNothingNeedsHairpin},
	{id: idCoreDNSActivation, name: "ActiveInEveryKubernetesBlock", want: OK, contains: "active in every server block"},
	{id: idCoreDNSActivation, name: "BlockWithKubernetesWithoutHairpin", want: Fail, contains: "cluster.local. on dns://:5353", change: func(t *testing.T, c *cluster) {
		c.metrics[corednsB+":9153"] += `coredns_plugin_enabled{name="kubernetes",server="dns://:5353",view="",zone="cluster.local."} 1` + "\n"
	}},

	{id: idCoreDNSKinds, name: "EveryKindListed", want: OK, contains: "listed every kind"},
	{id: idCoreDNSKinds, name: "GatewayForbidden", want: Fail, contains: "gateway in coredns-a (watch errors: forbidden 3)", change: func(t *testing.T, c *cluster) {
		m := strings.Replace(c.metrics[corednsA+":9153"], `kind="gateway"} 1`, `kind="gateway"} 0`, 1)
		c.metrics[corednsA+":9153"] = m + `coredns_hairpin_watch_errors_total{cache="5f2c1a",kind="gateway",reason="forbidden"} 3` + "\n"
	}},

	{id: idCoreDNSKinds, name: "KindStillListing", want: Warn, contains: "has not listed tlsroute in coredns-b yet", change: func(t *testing.T, c *cluster) {
		c.metrics[corednsB+":9153"] = strings.Replace(c.metrics[corednsB+":9153"], `kind="tlsroute"} 1`, `kind="tlsroute"} 0`, 1)
	}},
	{id: idCoreDNSKinds, name: "PastWatchErrors", want: Warn, contains: "ingress in coredns-a (watch errors: unavailable 2)", change: func(t *testing.T, c *cluster) {
		c.metrics[corednsA+":9153"] += `coredns_hairpin_watch_errors_total{cache="5f2c1a",kind="ingress",reason="unavailable"} 2` + "\n"
	}},

	{id: idCoreDNSTargets, name: "ServesEveryTarget", want: OK, contains: "CoreDNS serves 2 targets"},
	{id: idCoreDNSTargets, name: "DisabledTarget", want: Fail, contains: "1 disabled target", change: func(t *testing.T, c *cluster) {
		m := strings.Replace(c.metrics[corednsA+":9153"], `state="disabled"} 0`, `state="disabled"} 1`, 1)
		c.metrics[corednsA+":9153"] = strings.Replace(m, `state="serving"} 2`, `state="serving"} 1`, 1)
	}},
	{id: idCoreDNSTargets, name: "TargetWaitingForAReadyEndpoint", want: Warn, contains: "1 target waiting for a ready endpoint", change: func(t *testing.T, c *cluster) {
		m := strings.Replace(c.metrics[corednsA+":9153"], `state="waiting"} 0`, `state="waiting"} 1`, 1)
		c.metrics[corednsA+":9153"] = strings.Replace(m, `state="serving"} 2`, `state="serving"} 1`, 1)
	}},

	{id: idControllersFound, name: "IngressNginxByConfigMap", want: OK, contains: `deployment/ingress-nginx/ingress-nginx-controller requires PROXY (ConfigMap ingress-nginx/ingress-nginx-controller: use-proxy-protocol: "true")`},
	{id: idControllersFound, name: "IngressNginxByAWSAnnotation", want: OK, contains: `aws-load-balancer-proxy-protocol: "*"`, change: func(t *testing.T, c *cluster) {
		find[*core.ConfigMap](t, c, "ingress-nginx", "ingress-nginx-controller").Data = nil
		find[*core.Service](t, c, "ingress-nginx", "ingress-nginx-controller").Annotations = map[string]string{
			"service.beta.kubernetes.io/aws-load-balancer-proxy-protocol": "*",
		}
	}},
	{id: idControllersFound, name: "AnnotatedLoadBalancerWithoutController", want: Warn, contains: "no IngressClass or Gateway was found behind it", change: func(t *testing.T, c *cluster) {
		lb := service("edge", "haproxy", map[string]string{"app": "haproxy"}, "", port("http", 80, 80))
		lb.Spec.Type = core.ServiceTypeLoadBalancer
		lb.Annotations = map[string]string{"load-balancer.hetzner.cloud/uses-proxyprotocol": "true"}
		c.add(lb)
	}},

	{id: idIngressClassTarget, name: "TargetSelectsTheClass", want: OK, contains: "target hairpin-system/ingress-nginx selects it"},
	{id: idIngressClassTarget, name: "NoTargetSelectsTheClass", want: Fail, contains: `"ingressClasses":["nginx"]`, change: func(t *testing.T, c *cluster) {
		find[*core.Service](t, c, "hairpin-system", "ingress-nginx").Annotations[rules.IngressClassesAnnotation] = "other"
	}},

	{id: idGatewayTarget, name: "TargetSelectsTheGateway", want: OK, contains: "target hairpin-system/tenant-gw selects it"},
	{id: idGatewayTarget, name: "NoTargetSelectsTheGateway", want: Fail, contains: `"gateways":["tenant/gw"]`, change: func(t *testing.T, c *cluster) {
		c.remove("hairpin-system", "tenant-gw")
		c.remove("hairpin-system", "tenant-gw-x7k2p")
	}},

	{id: idLBStatus, name: "ShortCircuitedAndProxied", want: OK, contains: "needs no hairpin: nothing is short-circuited: web/edge-ngf 203.0.113.30 (ipMode: Proxy)"},
	{id: idLBStatus, name: "HostnameOnlyNeedsNoHairpin", want: OK, contains: "envoy-tenant-gw-1a2b3c lb.example.net (hostname only)", change: func(t *testing.T, c *cluster) {
		find[*core.Service](t, c, "envoy-gateway-system", "envoy-tenant-gw-1a2b3c").Status.LoadBalancer.Ingress = []core.LoadBalancerIngress{{Hostname: "lb.example.net"}}
	}},
	{id: idLBStatus, name: "LoadBalancerPending", want: Warn, contains: "has no address yet", change: func(t *testing.T, c *cluster) {
		find[*core.Service](t, c, "ingress-nginx", "ingress-nginx-controller").Status.LoadBalancer.Ingress = nil
	}},

	{id: idTargetUnnecessary, name: "EveryTargetIsNeeded", want: OK, contains: "no target fronts a controller that needs no hairpin"},
	{id: idTargetUnnecessary, name: "IPModeProxy", want: Warn, contains: "target hairpin-system/ingress-nginx is unnecessary", change: func(t *testing.T, c *cluster) {
		proxy := core.LoadBalancerIPModeProxy
		find[*core.Service](t, c, "ingress-nginx", "ingress-nginx-controller").Status.LoadBalancer.Ingress[0].IPMode = &proxy
	}},
	{id: idTargetUnnecessary, name: "HostnameOnly", want: Warn, contains: "target hairpin-system/tenant-gw is unnecessary", change: func(t *testing.T, c *cluster) {
		find[*core.Service](t, c, "envoy-gateway-system", "envoy-tenant-gw-1a2b3c").Status.LoadBalancer.Ingress = []core.LoadBalancerIngress{{Hostname: "lb.example.net"}}
	}},

	{id: idTargetsFound, name: "Targets", want: OK, contains: "2 targets in hairpin-system: ingress-nginx, tenant-gw"},
	{id: idTargetsFound, name: "NoTargetButControllersNeedOne", want: Fail, contains: "but 2 controllers require PROXY", change: func(t *testing.T, c *cluster) {
		for _, name := range []string{"ingress-nginx", "tenant-gw"} {
			c.remove("hairpin-system", name)
			c.remove("hairpin-system", name+"-x7k2p")
		}
	}},

	{id: idTargetsFound, name: "NoTargetAndNoneNeeded", want: OK, contains: "no target in hairpin-system (Services labelled hairpin.coredns-hairpin.io/target), and none is needed: no controller that requires PROXY has an address the dataplane short-circuits", change: nothingNeedsHairpin},

	{id: idTargetAnnotations, name: "AnnotationsParse", want: OK, contains: "target hairpin-system/tenant-gw selects gateways tenant/gw"},
	{id: idTargetAnnotations, name: "MalformedGateways", want: Fail, contains: "fix targets.tenant-gw.gateways", change: func(t *testing.T, c *cluster) {
		find[*core.Service](t, c, "hairpin-system", "tenant-gw").Annotations[rules.GatewaysAnnotation] = "gw"
	}},

	{id: idTargetZones, name: "ZonesSet", want: OK, contains: "target hairpin-system/ingress-nginx may answer zones example.com"},
	{id: idTargetZones, name: "NoZones", want: Fail, contains: `--set-json 'targets.ingress-nginx.zones=["example.com"]'`, change: func(t *testing.T, c *cluster) {
		delete(find[*core.Service](t, c, "hairpin-system", "ingress-nginx").Annotations, rules.ZonesAnnotation)
	}},
	{id: idTargetZones, name: "RootZone", want: Warn, contains: "the hijack guard is off", change: func(t *testing.T, c *cluster) {
		find[*core.Service](t, c, "hairpin-system", "ingress-nginx").Annotations[rules.ZonesAnnotation] = "."
	}},

	{id: idTargetAddress, name: "ClusterIP", want: OK, contains: "target hairpin-system/tenant-gw answers with 127.77.0.102"},
	{id: idTargetAddress, name: "Headless", want: Fail, contains: "has no ClusterIP", change: func(t *testing.T, c *cluster) {
		find[*core.Service](t, c, "hairpin-system", "tenant-gw").Spec.ClusterIP = core.ClusterIPNone
	}},

	{id: idTargetEndpoints, name: "ReadyProxies", want: OK, contains: "2 ready proxy endpoints"},
	{id: idTargetEndpoints, name: "NoReadyProxy", want: Fail, contains: "no ready proxy endpoint (2 not ready)", change: func(t *testing.T, c *cluster) {
		notReady := false
		for i := range find[*discovery.EndpointSlice](t, c, "hairpin-system", "tenant-gw-x7k2p").Endpoints {
			find[*discovery.EndpointSlice](t, c, "hairpin-system", "tenant-gw-x7k2p").Endpoints[i].Conditions.Ready = &notReady
		}
	}},

	{id: idProxyUpstream, name: "EveryRouteUp", want: OK, contains: "route tenant-gw-http of target hairpin-system/tenant-gw: the proxy reaches envoy-tenant-gw-1a2b3c.envoy-gateway-system.svc.cluster.local.:80 (2/2 pods)"},
	{id: idProxyUpstream, name: "UpstreamDown", want: Fail, contains: "cannot reach ingress-nginx-controller.ingress-nginx.svc.cluster.local.:443 (down in hairpin-proxy-b)", change: func(t *testing.T, c *cluster) {
		c.metrics[proxyB+":9090"] = strings.Replace(c.metrics[proxyB+":9090"], `route="ingress-nginx-https"} 1`, `route="ingress-nginx-https"} 0`, 1)
	}},
	{id: idProxyUpstream, name: "RouteMissing", want: Fail, contains: "has no such route", change: func(t *testing.T, c *cluster) {
		c.metrics[proxyA+":9090"] = strings.Replace(c.metrics[proxyA+":9090"], `hairpin_proxy_upstream_up{route="tenant-gw-http"} 1`, "", 1)
	}},

	{id: idProxyUpstream, name: "ProxyMetricsForbidden", want: Warn, contains: "may not read the proxy's metrics (get pods/proxy in hairpin-system is forbidden)",
		as: withoutResource("pods/proxy")},

	{id: idHostsOutsideZones, name: "EveryHostInsideItsZones", want: OK, contains: "every host of a selected object is inside its target's zones (CoreDNS counts 0 hosts outside their zones in all)"},
	{id: idHostsOutsideZones, name: "IngressForAForeignDomain", want: Warn, contains: "1 host of target hairpin-system/ingress-nginx is outside its zones (example.com) and not answered: login.other.org", change: func(t *testing.T, c *cluster) {
		c.add(ingress("default", "hijack", "nginx", "login.other.org"))
	}},

	{id: idHostsUnselected, name: "EveryObjectSelected", want: OK, contains: "every object that names hosts is selected by a target"},
	{id: idHostsUnselected, name: "ClassWithoutTarget", want: Warn, contains: `1 object of ingress class "traefik" names hosts that no target selects`, change: func(t *testing.T, c *cluster) {
		c.add(ingress("default", "blog", "traefik", "blog.example.com"))
	}},

	{id: idHostsConflicts, name: "NoConflict", want: OK, contains: "no object is selected by several targets"},
	{id: idHostsConflicts, name: "TwoTargetsSelectOneIngress", want: Warn, contains: "ingress/default/app is selected by several targets; hairpin-system/ingress-nginx answers", change: func(t *testing.T, c *cluster) {
		c.addTarget("catch-all", "127.77.0.103", map[string]string{rules.ZonesAnnotation: "example.com", rules.IngressClassesAnnotation: "*"}, namedPort("http", 80, "8090"))
	}},

	{id: idNodeLocalDNS, name: "NotInstalled", want: OK, contains: "node-local-dns is not installed"},
	{id: idNodeLocalDNS, name: "ForwardsEveryZone", want: OK, contains: "has a server block for every target zone", change: func(t *testing.T, c *cluster) {
		addNodeLocalDNS(c, "example.com:53 tenant.org:53 {\n    forward . __PILLAR__CLUSTER__DNS__\n}\n")
	}},
	{id: idNodeLocalDNS, name: "SendsZonesPastCoreDNS", want: Warn, contains: "sends example.com, tenant.org past CoreDNS", change: func(t *testing.T, c *cluster) {
		addNodeLocalDNS(c, "")
	}},

	{id: idManagedDNS, name: "SelfManaged", want: OK, contains: "shows no cloud or addon manager"},
	{id: idManagedDNS, name: "EKSAddon", want: Warn, contains: "managed by EKS (label eks.amazonaws.com/component=coredns", change: func(t *testing.T, c *cluster) {
		find[*core.Pod](t, c, "kube-system", "coredns-a").Labels["eks.amazonaws.com/component"] = "coredns"
	}},
}

// addNodeLocalDNS adds node-local-dns as its upstream manifest installs
// it, with the cluster.local block of the stock Corefile and extra.
func addNodeLocalDNS(c *cluster, extra string) {
	labels := map[string]string{"k8s-app": "node-local-dns"}
	ds := &apps.DaemonSet{
		ObjectMeta: objectMeta("kube-system", "node-local-dns", labels),
		Spec: apps.DaemonSetSpec{
			Selector: deployment("", "", labels).Spec.Selector,
			Template: core.PodTemplateSpec{
				ObjectMeta: objectMeta("", "", labels),
				Spec:       core.PodSpec{Containers: []core.Container{{Name: "node-cache", Image: "registry.k8s.io/dns/k8s-dns-node-cache:1.26.4"}}},
			},
		},
	}
	corefile := "cluster.local:53 {\n    errors\n    cache 30\n    forward . __PILLAR__CLUSTER__DNS__ {\n        force_tcp\n    }\n}\n.:53 {\n    forward . __PILLAR__UPSTREAM__SERVERS__\n}\n" + extra
	c.add(ds, &core.ConfigMap{ObjectMeta: objectMeta("kube-system", "node-local-dns", nil), Data: map[string]string{"Corefile": corefile}})
}

// stockCoreDNS is the coredns.txt fixture without any hairpin series, as a
// CoreDNS without the plugin exports it.
// stockCoreDNSWhereNothingNeedsHairpin is a cluster that never adopted our
// image and needs no hairpin: no target, and every controller reached
// through its own load balancer (a Cozystack tenant exposed Proxied).
func stockCoreDNSWhereNothingNeedsHairpin(t *testing.T, c *cluster) {
	for _, name := range []string{"coredns-a", "coredns-b"} {
		find[*core.Pod](t, c, "kube-system", name).Spec.Containers[0].Image = "registry.k8s.io/coredns/coredns:v1.12.0"
	}
	stock := stockCoreDNS()
	c.metrics[corednsA+":9153"], c.metrics[corednsB+":9153"] = stock, stock
	nothingNeedsHairpin(t, c)
}

// nothingNeedsHairpin removes the targets and reaches every controller
// through a load balancer the dataplane does not short-circuit.
func nothingNeedsHairpin(t *testing.T, c *cluster) {
	exposeByNodePorts(t, c)
	find[*core.Service](t, c, "envoy-gateway-system", "envoy-tenant-gw-1a2b3c").Status.LoadBalancer.Ingress = []core.LoadBalancerIngress{{Hostname: "lb.example.net"}}
	for _, name := range []string{"ingress-nginx", "tenant-gw"} {
		c.remove("hairpin-system", name)
		c.remove("hairpin-system", name+"-x7k2p")
	}
}

func stockCoreDNS() string {
	var keep []string
	for _, l := range strings.Split(fixture("coredns.txt"), "\n") {
		if !strings.Contains(l, "coredns_hairpin_") && !strings.Contains(l, `name="hairpin"`) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestChecksAgainstAPIServer runs each case against a real kube-apiserver,
// with CoreDNS's and the proxy's metrics read through its real pod proxy,
// and checks the worst status of the case's check id.
func TestChecksAgainstAPIServer(t *testing.T) {
	e := newEnv(t)
	covered := map[string][]Status{}
	for _, tc := range checkCases {
		t.Run(tc.id+"/"+tc.name, func(t *testing.T) {
			c := healthyCluster()
			if tc.change != nil {
				tc.change(t, c)
			}
			e.apply(t, c)
			cfg := e.cp.Config
			if tc.as != nil {
				cfg = e.user(t, "checker", tc.as(t))
			}
			r := e.run(t, cfg)
			var mine []Check
			for _, ch := range r.Checks {
				if ch.ID == tc.id {
					mine = append(mine, ch)
				}
			}
			if len(mine) == 0 {
				t.Fatalf("no %s check in the report:\n%s", tc.id, table(t, r))
			}
			worst := mine[0].Status
			for _, ch := range mine {
				if rank(ch.Status) > rank(worst) {
					worst = ch.Status
				}
			}
			// The case's check: of those with the worst status, the
			// one that says what the case is about.
			i := slices.IndexFunc(mine, func(ch Check) bool {
				return ch.Status == worst && strings.Contains(ch.Message+" "+ch.Hint, tc.contains)
			})
			if worst != tc.want || i < 0 {
				t.Fatalf("worst %s status %s; want %s, with a check containing %q\nreport:\n%s", tc.id, worst, tc.want, tc.contains, table(t, r))
			}
			got := mine[i]
			if got.Status != OK && !strings.HasSuffix(got.Hint, DocsURL+"#"+tc.id) {
				t.Errorf("hint %q does not end with the docs anchor of %s", got.Hint, tc.id)
			}
			covered[tc.id] = append(covered[tc.id], tc.want)
		})
	}
	for _, id := range IDs() {
		if !slices.Contains(covered[id], OK) || !slices.ContainsFunc(covered[id], func(s Status) bool { return s != OK }) {
			t.Errorf("check %s lacks a passing or a failing case (has %v)", id, covered[id])
		}
	}
}

// TestHealthyClusterPassesEveryCheck: in the healthy cluster no check
// warns or fails, and every id is reported.
func TestHealthyClusterPassesEveryCheck(t *testing.T) {
	e := newEnv(t)
	e.apply(t, healthyCluster())
	r := e.run(t, e.cp.Config)
	for _, ch := range r.Checks {
		if ch.Status != OK {
			t.Errorf("%s %s: %s", ch.ID, ch.Status, ch.Message)
		}
	}
	for _, id := range IDs() {
		if !slices.ContainsFunc(r.Checks, func(c Check) bool { return c.ID == id }) {
			t.Errorf("no %s check", id)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", table(t, r))
	}
}

func rank(s Status) int { return slices.Index([]Status{OK, Warn, Fail}, s) }

func (e *env) run(t *testing.T, cfg *rest.Config) Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := Run(ctx, clientsFor(t, cfg), Options{Version: "v0.1.0"})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return r
}

func table(t testing.TB, r Report) string {
	var b strings.Builder
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// user is a client-certificate user bound to a ClusterRole of rules,
// both removed when t ends.
func (e *env) user(t *testing.T, name string, rules []rbac.PolicyRule) *rest.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	role := &rbac.ClusterRole{ObjectMeta: objectMeta("", name, nil), Rules: rules}
	binding := &rbac.ClusterRoleBinding{
		ObjectMeta: objectMeta("", name, nil),
		RoleRef:    rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbac.Subject{{Kind: rbac.UserKind, APIGroup: rbac.GroupName, Name: name}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := e.client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, o := range []client.Object{binding, role} {
			if err := e.client.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s: %v", o.GetName(), err)
			}
		}
	})
	_, cfg, err := e.cp.UserKubeconfig(name)
	if err != nil {
		t.Fatal(err)
	}
	// RBAC changes reach the authorizer's cache within a moment.
	if err := e.waitAllowed(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// waitAllowed waits until cfg may list namespaces' Services, the first read
// every role here grants.
func (e *env) waitAllowed(ctx context.Context, cfg *rest.Config) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for {
		_, err := kube.CoreV1().Services("kube-system").List(ctx, meta.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("user never allowed: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
