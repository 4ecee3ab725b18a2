package manifests

import (
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
)

// isPatch reports whether d is a strategic-merge patch shipped as a
// resource (manifests/coredns/deployment-image.yaml): it has no selector.
func isPatch(d *appsv1.Deployment) bool { return d.Spec.Selector == nil }

// TestWorkloadsRunLockedDown checks every full Deployment: non-root,
// read-only root filesystem, no privilege escalation, all capabilities
// dropped (CoreDNS may add back NET_BIND_SERVICE only), RuntimeDefault
// seccomp, resources set; and for the proxy no service-account token at all.
func TestWorkloadsRunLockedDown(t *testing.T) {
	for _, r := range renderAll(t) {
		for _, d := range all[*appsv1.Deployment](r.objs) {
			if isPatch(d) {
				continue
			}
			t.Run(r.dir+"/"+d.Name, func(t *testing.T) {
				pod := d.Spec.Template.Spec
				psc := pod.SecurityContext
				if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("pod seccompProfile is not RuntimeDefault")
				}
				for _, c := range pod.Containers {
					sc := c.SecurityContext
					if sc == nil {
						t.Errorf("container %s: no securityContext", c.Name)
						continue
					}
					nonRoot := firstNonNil(sc.RunAsNonRoot, psc.RunAsNonRoot)
					uid := firstNonNil(sc.RunAsUser, psc.RunAsUser)
					if nonRoot == nil || !*nonRoot || uid == nil || *uid != 65532 {
						t.Errorf("container %s: runAsNonRoot %v runAsUser %v; want true, 65532", c.Name, deref(nonRoot), deref(uid))
					}
					if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
						t.Errorf("container %s: root filesystem is writable", c.Name)
					}
					if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
						t.Errorf("container %s: allowPrivilegeEscalation is not false", c.Name)
					}
					if sc.Privileged != nil && *sc.Privileged {
						t.Errorf("container %s: privileged", c.Name)
					}
					if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
						t.Errorf("container %s: capabilities do not drop ALL", c.Name)
					} else {
						allowed := []corev1.Capability{}
						if d.Name == "coredns" {
							allowed = append(allowed, "NET_BIND_SERVICE")
						}
						for _, add := range sc.Capabilities.Add {
							if !slices.Contains(allowed, add) {
								t.Errorf("container %s: adds capability %s", c.Name, add)
							}
						}
					}
					if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
						t.Errorf("container %s: want cpu and memory requests and a memory limit, got %v", c.Name, c.Resources)
					}
				}
				if d.Name != "hairpin-proxy" {
					return
				}
				if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
					t.Errorf("proxy pod automounts a service-account token")
				}
				for _, v := range pod.Volumes {
					if v.Projected != nil {
						for _, s := range v.Projected.Sources {
							if s.ServiceAccountToken != nil {
								t.Errorf("proxy pod projects a service-account token (volume %s)", v.Name)
							}
						}
					}
					if v.Secret != nil {
						t.Errorf("proxy pod mounts secret %s", v.Secret.SecretName)
					}
				}
				sa := find[*corev1.ServiceAccount](r.objs, pod.ServiceAccountName)
				if sa == nil || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
					t.Errorf("proxy ServiceAccount %q missing or automounting its token", pod.ServiceAccountName)
				}
				if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
					t.Errorf("proxy replicas %v; want at least 2", deref(d.Spec.Replicas))
				}
				if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 ||
					a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" {
					t.Errorf("proxy pods are not spread by hostname")
				}
				c := pod.Containers[0]
				if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port.String() != "metrics" {
					t.Errorf("proxy readiness probe %+v; want GET /readyz on metrics", p)
				}
				if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != "metrics" {
					t.Errorf("proxy liveness probe %+v; want GET /healthz on metrics", p)
				}
			})
		}
	}
}

func firstNonNil[T any](ps ...*T) *T {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

func deref[T any](p *T) any {
	if p == nil {
		return "<unset>"
	}
	return *p
}

// gatewayGroup is the Gateway API's API group.
const gatewayGroup = "gateway.networking.k8s.io"

// TestRBACIsReadOnlyAndGatewayIsOptIn checks every rule of every (Cluster)Role:
// only get/list/watch, no wildcards, no non-resource URLs; Gateway API rules
// only in renders that include the gateway-api component, and a Corefile with
// `gateway_class` only where those rules are granted.
func TestRBACIsReadOnlyAndGatewayIsOptIn(t *testing.T) {
	readOnly := []string{"get", "list", "watch"}
	for _, r := range renderAll(t) {
		t.Run(r.dir, func(t *testing.T) {
			var rules []rbacv1.PolicyRule
			for _, cr := range all[*rbacv1.ClusterRole](r.objs) {
				rules = append(rules, cr.Rules...)
			}
			for _, role := range all[*rbacv1.Role](r.objs) {
				rules = append(rules, role.Rules...)
			}
			var gatewayResources []string
			for _, rule := range rules {
				for _, v := range rule.Verbs {
					if !slices.Contains(readOnly, v) {
						t.Errorf("rule %v grants verb %q", rule, v)
					}
				}
				for _, list := range [][]string{rule.Verbs, rule.APIGroups, rule.Resources, rule.ResourceNames} {
					if slices.Contains(list, "*") {
						t.Errorf("rule %v has a wildcard", rule)
					}
				}
				if len(rule.NonResourceURLs) > 0 {
					t.Errorf("rule %v grants non-resource URLs", rule)
				}
				if slices.Contains(rule.APIGroups, gatewayGroup) {
					gatewayResources = append(gatewayResources, rule.Resources...)
				}
			}
			wantGateway := r.dir == "overlays/cluster-gateway"
			slices.Sort(gatewayResources)
			if wantGateway {
				if want := []string{"gateways", "grpcroutes", "httproutes", "tlsroutes"}; !slices.Equal(gatewayResources, want) {
					t.Errorf("Gateway API resources granted %v; want %v", gatewayResources, want)
				}
			} else if len(gatewayResources) > 0 {
				t.Errorf("grants Gateway API resources %v without the gateway-api component", gatewayResources)
			}
			for _, cm := range all[*corev1.ConfigMap](r.objs) {
				if cf, ok := cm.Data["Corefile"]; ok && strings.Contains(cf, "gateway_class") != wantGateway {
					t.Errorf("Corefile has gateway_class = %v; want %v (it needs the Gateway API RBAC)", !wantGateway, wantGateway)
				}
			}
		})
	}
}

// varRef is a $(VAR) reference, which the kubelet expands in args.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand expands $(VAR) in s from the container's literal env, as the
// kubelet does; unknown references stay as they are.
func expand(s string, env []corev1.EnvVar) string {
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := varRef.FindStringSubmatch(ref)[1]
		for _, e := range env {
			if e.Name == name && e.ValueFrom == nil {
				return e.Value
			}
		}
		return ref
	})
}

// route is one parsed --route of the proxy.
type route struct {
	listenPort, upstreamPort string
	service, namespace       string
	domain                   string
}

// proxyRoutes parses the proxy container's --route args after expansion.
func proxyRoutes(t *testing.T, d *appsv1.Deployment) []route {
	t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	var routes []route
	for _, arg := range c.Args {
		v, ok := strings.CutPrefix(arg, "--route=")
		if !ok {
			continue
		}
		v = expand(v, c.Env)
		listen, rest, ok := strings.Cut(v, "=")
		if !ok {
			t.Fatalf("route %q has no '='", v)
		}
		upstream, _, _ := strings.Cut(rest, ",")
		host, port, err := net.SplitHostPort(upstream)
		if err != nil {
			t.Fatalf("route %q upstream: %v", v, err)
		}
		_, lport, err := net.SplitHostPort(listen)
		if err != nil {
			t.Fatalf("route %q listen: %v", v, err)
		}
		labels := strings.Split(strings.TrimSuffix(host, "."), ".")
		if len(labels) < 4 || labels[2] != "svc" {
			t.Fatalf("route %q: upstream %q is not SERVICE.NAMESPACE.svc.DOMAIN", v, host)
		}
		routes = append(routes, route{
			listenPort: lport, upstreamPort: port,
			service: labels[0], namespace: labels[1], domain: strings.Join(labels[3:], "."),
		})
	}
	return routes
}

// corefileDomain returns the first zone of the Corefile's kubernetes
// plugin, with {$VAR} taken from env.
func corefileDomain(corefile string, env []corev1.EnvVar) string {
	m := regexp.MustCompile(`(?m)^\s*kubernetes\s+(\S+)`).FindStringSubmatch(corefile)
	if m == nil {
		return ""
	}
	zone := m[1]
	if v, ok := strings.CutPrefix(zone, "{$"); ok {
		name := strings.TrimSuffix(v, "}")
		zone = ""
		for _, e := range env {
			if e.Name == name {
				zone = e.Value
			}
		}
	}
	return zone
}

// TestProxyWiringIsConsistent checks that the proxy's routes, Service and
// NetworkPolicy agree: :8080 -> SERVICE:80 and :8443 -> SERVICE:443, the
// Service maps 80/443 onto those ports, the NetworkPolicy lets anyone in on
// them and lets the proxy out only to DNS and to the route's namespace, and
// the upstream's cluster domain is the one the render's CoreDNS serves.
func TestProxyWiringIsConsistent(t *testing.T) {
	for _, r := range renderAll(t) {
		d := find[*appsv1.Deployment](r.objs, "hairpin-proxy")
		if d == nil {
			continue
		}
		t.Run(r.dir, func(t *testing.T) {
			checkProxyWiring(t, r.objs)
		})
	}
}

// checkProxyWiring is TestProxyWiringIsConsistent for one render, and
// returns the proxy's routes.
func checkProxyWiring(t *testing.T, objs []apiruntime.Object) []route {
	t.Helper()
	d := find[*appsv1.Deployment](objs, "hairpin-proxy")
	routes := proxyRoutes(t, d)
	got := map[string]string{}
	for _, rt := range routes {
		got[rt.listenPort] = rt.upstreamPort
		if rt.service != routes[0].service || rt.namespace != routes[0].namespace || rt.domain != routes[0].domain {
			t.Errorf("routes disagree on the upstream: %+v", routes)
		}
	}
	if want := map[string]string{"8080": "80", "8443": "443"}; len(got) != 2 || got["8080"] != want["8080"] || got["8443"] != want["8443"] {
		t.Fatalf("routes %v; want :8080 -> 80 and :8443 -> 443", got)
	}
	ns := routes[0].namespace

	containerPorts := map[string]int32{}
	for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
		containerPorts[p.Name] = p.ContainerPort
	}
	svc := find[*corev1.Service](objs, "hairpin-proxy")
	if svc == nil {
		t.Fatal("no hairpin-proxy Service")
	}
	if svc.Spec.Type != "" && svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("Service type %s; want ClusterIP", svc.Spec.Type)
	}
	svcPorts := map[string]string{}
	for _, p := range svc.Spec.Ports {
		target := p.TargetPort.IntVal
		if p.TargetPort.StrVal != "" {
			target = containerPorts[p.TargetPort.StrVal]
		}
		svcPorts[p.Name] = net.JoinHostPort("", itoa(p.Port)) + "->" + itoa(target)
	}
	if want := map[string]string{"http": ":80->8080", "https": ":443->8443"}; svcPorts["http"] != want["http"] || svcPorts["https"] != want["https"] || len(svcPorts) != 2 {
		t.Errorf("Service ports %v; want %v", svcPorts, want)
	}

	np := find[*netv1.NetworkPolicy](objs, "hairpin-proxy")
	if np == nil {
		t.Fatal("no hairpin-proxy NetworkPolicy")
	}
	if !slices.Equal(np.Spec.PolicyTypes, []netv1.PolicyType{netv1.PolicyTypeIngress, netv1.PolicyTypeEgress}) {
		t.Errorf("policyTypes %v; want Ingress and Egress", np.Spec.PolicyTypes)
	}
	var ingressPorts []string
	for _, rule := range np.Spec.Ingress {
		if len(rule.From) > 0 {
			continue
		}
		for _, p := range rule.Ports {
			ingressPorts = append(ingressPorts, p.Port.String())
		}
	}
	if slices.Sort(ingressPorts); !slices.Equal(ingressPorts, []string{"8080", "8443"}) {
		t.Errorf("NetworkPolicy admits everyone on %v; want 8080 and 8443", ingressPorts)
	}
	egress := map[string]string{} // namespace -> sorted ports
	for _, rule := range np.Spec.Egress {
		var ports []string
		for _, p := range rule.Ports {
			ports = append(ports, string(*p.Protocol)+"/"+p.Port.String())
		}
		slices.Sort(ports)
		if len(rule.To) != 1 || rule.To[0].NamespaceSelector == nil || rule.To[0].PodSelector == nil {
			t.Errorf("egress rule %+v: want one peer with a namespace and a pod selector", rule)
			continue
		}
		egress[rule.To[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]] = strings.Join(ports, ",")
	}
	if want := "TCP/443,TCP/80"; egress[ns] != want {
		t.Errorf("NetworkPolicy egress to the route's namespace %q: %q; want %q (egress: %v)", ns, egress[ns], want, egress)
	}
	if want := "TCP/53,UDP/53"; egress["kube-system"] != want {
		t.Errorf("NetworkPolicy egress to kube-system DNS: %q; want %q", egress["kube-system"], want)
	}
	if len(egress) != 2 {
		t.Errorf("NetworkPolicy egress reaches %v; want only kube-system and %s", egress, ns)
	}

	// The upstream's domain is the one this render's CoreDNS serves.
	var env []corev1.EnvVar
	if cd := find[*appsv1.Deployment](objs, "coredns"); cd != nil && len(cd.Spec.Template.Spec.Containers) > 0 {
		env = cd.Spec.Template.Spec.Containers[0].Env
	}
	for _, cm := range all[*corev1.ConfigMap](objs) {
		if cf, ok := cm.Data["Corefile"]; ok {
			if dom := corefileDomain(cf, env); dom != routes[0].domain {
				t.Errorf("proxy upstream domain %q; the Corefile serves %q", routes[0].domain, dom)
			}
		}
	}
	return routes
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }
