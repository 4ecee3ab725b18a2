package kubectlhairpin

import (
	"slices"
	"strings"
	"testing"

	apps "k8s.io/api/apps/v1"
	core "k8s.io/api/core/v1"
	rbac "k8s.io/api/rbac/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
)

// daemonSet is a DaemonSet labelled k8s-app=app whose one container runs
// image.
func daemonSet(namespace, name, app, container, image string) *apps.DaemonSet {
	labels := map[string]string{k8sAppLabel: app}
	ds := &apps.DaemonSet{ObjectMeta: objectMeta(namespace, name, labels)}
	ds.Spec.Selector = deployment("", "", labels).Spec.Selector
	ds.Spec.Template.Labels = labels
	ds.Spec.Template.Spec.Containers = []core.Container{{Name: container, Image: image}}
	return ds
}

// addKubeProxy adds kube-proxy's DaemonSet as kubeadm installs it.
func addKubeProxy(c *cluster, image string) {
	c.add(daemonSet("kube-system", "kube-proxy", "kube-proxy", "kube-proxy", image))
}

// addCilium adds what Cilium's chart leaves in kube-system: the agent's
// DaemonSet and cilium-config with its kube-proxy-replacement.
func addCilium(c *cluster, image, kpr string) {
	c.add(daemonSet("kube-system", "cilium", "cilium", "cilium-agent", image),
		&core.ConfigMap{ObjectMeta: objectMeta("kube-system", "cilium-config", nil), Data: map[string]string{
			ciliumKPRKey: kpr, "bpf-lb-algorithm": "maglev", "enable-external-ips": "true",
		}})
}

// exposeByExternalIPs makes ingress-nginx's controller Service a ClusterIP
// Service with an externalIP, as Cozystack's publishing.externalIPs does.
func exposeByExternalIPs(t *testing.T, c *cluster) {
	svc := find[*core.Service](t, c, "ingress-nginx", "ingress-nginx-controller")
	svc.Spec.Type = core.ServiceTypeClusterIP
	svc.Spec.ExternalIPs = []string{"203.0.113.50"}
	svc.Status = core.ServiceStatus{}
}

// exposeByNodePorts makes ingress-nginx's controller Service a NodePort
// Service on 30000 and 30001, as Cozystack's exposeMethod Proxied renders a
// tenant's (packages/apps/kubernetes/templates/helmreleases/ingress-nginx.yaml
// of cozystack/cozystack at 3c780acd): a load balancer outside the cluster
// (the management cluster's ingress) dials those ports, and the hosts
// resolve to its address, which the dataplane does not know. The tenant
// has no target: nothing needs one.
func exposeByNodePorts(t *testing.T, c *cluster) {
	svc := find[*core.Service](t, c, "ingress-nginx", "ingress-nginx-controller")
	svc.Spec.Type = core.ServiceTypeNodePort
	for i, nodePort := range []int32{30000, 30001} {
		svc.Spec.Ports[i].NodePort = nodePort
	}
	svc.Status = core.ServiceStatus{}
}

// addDirectTargets adds a Cilium Gateway that needs no PROXY (a
// selectorless Service, as Cilium's), a direct target in front of it, and
// a direct target in front of NGINX Gateway Fabric's Gateway web/edge,
// which requires PROXY.
func addDirectTargets(t *testing.T, c *cluster) {
	find[*core.Service](t, c, "web", "edge-ngf").Spec.ClusterIP = "127.77.0.202"
	for _, ip := range []string{corednsA, corednsB} {
		c.metrics[ip+":9153"] = strings.Replace(c.metrics[ip+":9153"], `state="serving"} 2`, `state="serving"} 4`, 1)
	}
	public := service("gateways", "cilium-gateway-public", nil, "127.77.0.201", port("http", 80, 80))
	public.Spec.Type = core.ServiceTypeLoadBalancer
	public.Status.LoadBalancer.Ingress = []core.LoadBalancerIngress{{IP: "203.0.113.60"}}
	c.add(
		&gw.GatewayClass{ObjectMeta: objectMeta("", "cilium", nil), Spec: gw.GatewayClassSpec{ControllerName: "io.cilium/gateway-controller"}},
		gateway("gateways", "public", "cilium", "*.public.example.org"),
		httpRoute("gateways", "login", "public", "login.public.example.org"),
		public,
	)
	c.addDirectTarget("public", "gateways/cilium-gateway-public", map[string]string{
		rules.ZonesAnnotation: "public.example.org", rules.GatewaysAnnotation: "gateways/public",
	})
	c.addDirectTarget("edge-direct", "web/edge-ngf", map[string]string{
		rules.ZonesAnnotation: "example.com", rules.GatewaysAnnotation: "web/edge",
	})
}

// addDirectTarget adds a direct target as the chart renders it: a headless
// Service without selector or ports that carries the annotations.
func (c *cluster) addDirectTarget(name, direct string, annotations map[string]string) {
	svc := service("hairpin-system", name, nil, core.ClusterIPNone)
	svc.Labels = map[string]string{rules.TargetLabel: name}
	svc.Annotations = annotations
	svc.Annotations[rules.DirectServiceAnnotation] = direct
	c.add(svc)
}

// TestGoldenDataplane compares the report on each dataplane, and with
// direct targets, with testdata/golden (go test -update rewrites them):
// who short-circuits, and whether ipMode: Proxy spares a load balancer.
func TestGoldenDataplane(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name   string
		change func(*testing.T, *cluster)
	}{
		{"kube-proxy-1.29", func(_ *testing.T, c *cluster) { addKubeProxy(c, "registry.k8s.io/kube-proxy:v1.29.4") }},
		{"kube-proxy-1.31", func(_ *testing.T, c *cluster) { addKubeProxy(c, "registry.k8s.io/kube-proxy:v1.31.2") }},
		{"cilium-1.16", func(_ *testing.T, c *cluster) { addCilium(c, "quay.io/cilium/cilium:v1.16.9", "true") }},
		{"cilium-1.18.0", func(_ *testing.T, c *cluster) { addCilium(c, "quay.io/cilium/cilium:v1.18.0", "true") }},
		{"cilium-1.18.1", func(_ *testing.T, c *cluster) { addCilium(c, "quay.io/cilium/cilium:v1.18.1", "true") }},
		{"cilium-1.19.5", func(_ *testing.T, c *cluster) {
			addCilium(c, "quay.io/cilium/cilium:v1.19.5@sha256:4d1b2a5dbd8e3d0bb8d7d1b9b6c8e1f0a2c4d6e8f0a1b3c5d7e9f1a3b5c7d9e1", "true")
		}},
		{"cilium-without-kube-proxy-replacement", func(_ *testing.T, c *cluster) {
			addCilium(c, "quay.io/cilium/cilium:v1.19.5", "false")
			addKubeProxy(c, "registry.k8s.io/kube-proxy:v1.31.2")
		}},
		{"externalips-kube-proxy", exposeByExternalIPs},
		{"externalips-cilium-1.19.5", func(t *testing.T, c *cluster) {
			addCilium(c, "quay.io/cilium/cilium:v1.19.5", "true")
			exposeByExternalIPs(t, c)
		}},
		{"direct-targets", addDirectTargets},
		{"nodeports-cilium-1.19.5", func(t *testing.T, c *cluster) {
			addCilium(c, "quay.io/cilium/cilium:v1.19.5", "true")
			exposeByNodePorts(t, c)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { e.goldenTable(t, tc.name, tc.change) })
	}
}

func init() {
	checkCases = append(checkCases,
		checkCase{id: idDataplane, name: "KubeProxyOfTheAPIServer", want: OK, contains: "the Service dataplane is kube-proxy v1."},
		checkCase{id: idDataplane, name: "CiliumIgnoresIPModeByMistake", want: Warn, contains: "cilium#40913", change: func(_ *testing.T, c *cluster) {
			addCilium(c, "quay.io/cilium/cilium:v1.18.0", "true")
		}},
		checkCase{id: idDataplane, name: "CiliumConfigUnreadable", want: Warn, contains: "but its cilium-config could not be read", change: func(_ *testing.T, c *cluster) {
			addCilium(c, "quay.io/cilium/cilium:v1.19.5", "true")
		}, as: droppingResource("configmaps")},
		checkCase{id: idLBStatus, name: "CiliumShortCircuits", want: OK, contains: "needs hairpin: Cilium (kube-proxy replacement) short-circuits ingress-nginx/ingress-nginx-controller 203.0.113.10", change: func(_ *testing.T, c *cluster) {
			addCilium(c, "quay.io/cilium/cilium:v1.19.5", "true")
		}},
		checkCase{id: idLBStatus, name: "NodePortsNeedNoHairpin", want: OK, contains: "needs no hairpin: nothing is short-circuited: ingress-nginx/ingress-nginx-controller NodePort 30000, 30001", change: exposeByNodePorts},
		checkCase{id: idIngressClassTarget, name: "NodePortsNeedNoTarget", want: OK, contains: `ingress class "nginx" needs no target: nothing is short-circuited`, change: func(t *testing.T, c *cluster) {
			exposeByNodePorts(t, c)
			c.remove("hairpin-system", "ingress-nginx")
		}},
		checkCase{id: idTargetUnnecessary, name: "NodePortsOnly", want: Warn, contains: "target hairpin-system/ingress-nginx is unnecessary", change: exposeByNodePorts},
		checkCase{id: idLBStatus, name: "ExternalIPsAreShortCircuited", want: OK, contains: "short-circuits ingress-nginx/ingress-nginx-controller 203.0.113.50 (externalIPs)", change: exposeByExternalIPs},
		checkCase{id: idGatewayTarget, name: "IPModeProxyIgnoredByOldKubeProxy", want: Fail, contains: `"gateways":["web/edge"]`, change: func(_ *testing.T, c *cluster) {
			addKubeProxy(c, "registry.k8s.io/kube-proxy:v1.29.4")
		}},
		checkCase{id: idControllersFound, name: "NginxProxyOfTheGateway", want: OK, contains: "NginxProxy web/edge-proxy: rewriteClientIP.mode: ProxyProtocol (the Gateway's parametersRef)", change: func(t *testing.T, c *cluster) {
			find[*gw.GatewayClass](t, c, "", "ngf").Spec.ParametersRef = nil
			attachNginxProxy(t, c, "ProxyProtocol")
		}},
		checkCase{id: idTargetAddress, name: "DirectTargetAnswersWithItsService", want: OK, contains: "target hairpin-system/public answers with gateways/cilium-gateway-public (no PROXY): 127.77.0.201", change: addDirectTargets},
		checkCase{id: idTargetAddress, name: "DirectServiceMissing", want: Fail, contains: "answers with gateways/cilium-gateway-public (no PROXY), which does not exist", change: func(t *testing.T, c *cluster) {
			addDirectTargets(t, c)
			c.remove("gateways", "cilium-gateway-public")
		}},
		checkCase{id: idTargetAnnotations, name: "DirectServiceMalformed", want: Fail, contains: "fix targets.public.direct", change: func(t *testing.T, c *cluster) {
			addDirectTargets(t, c)
			find[*core.Service](t, c, "hairpin-system", "public").Annotations[rules.DirectServiceAnnotation] = "cilium-gateway-public"
		}},
		checkCase{id: idTargetDirectRequiresProxy, name: "NoDirectTargetInFrontOfPROXY", want: OK, contains: "no direct target fronts a controller that requires PROXY"},
		checkCase{id: idTargetDirectRequiresProxy, name: "DirectTargetInFrontOfNGF", want: Fail, contains: "direct target hairpin-system/edge-direct fronts Gateway web/edge", change: addDirectTargets},
	)
}

// attachNginxProxy gives Gateway web/edge an NginxProxy of its own
// (spec.infrastructure.parametersRef) with rewriteClientIP.mode.
func attachNginxProxy(t *testing.T, c *cluster, mode string) {
	find[*gw.Gateway](t, c, "web", "edge").Spec.Infrastructure = &gw.GatewayInfrastructure{
		ParametersRef: &gw.LocalParametersReference{Group: "gateway.nginx.org", Kind: "NginxProxy", Name: "edge-proxy"},
	}
	c.add(object("gateway.nginx.org/v1alpha2", "NginxProxy", "web", "edge-proxy", map[string]any{
		"rewriteClientIP": map[string]any{"mode": mode},
	}))
}

// droppingResource is the docs' role with resource taken out of the rules
// that name it, the other resources of those rules kept.
func droppingResource(resource string) func(testing.TB) []rbac.PolicyRule {
	return func(t testing.TB) []rbac.PolicyRule {
		var out []rbac.PolicyRule
		for _, r := range docsClusterRole(t) {
			r.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(res string) bool { return res == resource })
			if len(r.Resources) > 0 {
				out = append(out, r)
			}
		}
		return out
	}
}
