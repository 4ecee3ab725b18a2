package manifests

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The keys of the "Targets" table of docs/architecture.md, spelled out
// here so that the chart is checked against them, not against the plugin.
const (
	targetLabel          = "hairpin.coredns-hairpin.io/target"
	zonesAnnotation      = "hairpin.coredns-hairpin.io/zones"
	ingressClassesAnnot  = "hairpin.coredns-hairpin.io/ingress-classes"
	gatewayClassesAnnot  = "hairpin.coredns-hairpin.io/gateway-classes"
	gatewaysAnnotation   = "hairpin.coredns-hairpin.io/gateways"
	directServiceAnnot   = "hairpin.coredns-hairpin.io/direct-service"
	proxyName            = "hairpin-proxy"
	gatewayGroup         = "gateway.networking.k8s.io"
	healthPortName       = "metrics"
	tenantCoreDNSName    = "coredns"
	defaultClusterDomain = "cluster.local"
)

// values is the part of the chart's values the invariants are checked
// against, decoded from the merged values of a case.
type values struct {
	ClusterDomain string             `json:"clusterDomain"`
	Targets       map[string]*target `json:"targets"`
	Proxy         struct {
		ProxyProtocol int    `json:"proxyProtocol"`
		HealthPort    int32  `json:"healthPort"`
		DialTimeout   string `json:"dialTimeout"`
		MaxConns      *int   `json:"maxConns"`
	} `json:"proxy"`
	CoreDNS struct {
		ServiceAccount struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"serviceAccount"`
	} `json:"coredns"`
	RBAC struct {
		GatewayAPI any `json:"gatewayAPI"`
	} `json:"rbac"`
	NetworkPolicy struct {
		Enabled     *bool `json:"enabled"`
		MetricsFrom []any `json:"metricsFrom"`
	} `json:"networkPolicy"`
	Tenant struct {
		Enabled      bool   `json:"enabled"`
		DNSServiceIP string `json:"dnsServiceIP"`
	} `json:"tenant"`
	ServiceMonitor struct {
		Enabled bool `json:"enabled"`
	} `json:"serviceMonitor"`
}

// target is one entry of the values' targets map.
type target struct {
	Name           string   `json:"-"` // the map key
	Enabled        *bool    `json:"enabled"`
	Zones          []string `json:"zones"`
	IngressClasses []string `json:"ingressClasses"`
	GatewayClasses []string `json:"gatewayClasses"`
	Gateways       []string `json:"gateways"`
	DestAddr       string   `json:"destAddr"`
	Direct         *struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"direct"`
	Upstream struct {
		Namespace   string            `json:"namespace"`
		Name        string            `json:"name"`
		PodSelector map[string]string `json:"podSelector"`
		Ports       []struct {
			Name          string `json:"name"`
			Port          int32  `json:"port"`
			ContainerPort int32  `json:"containerPort"`
			HeaderPort    int32  `json:"headerPort"`
			PodPort       int32  `json:"podPort"`
		} `json:"ports"`
	} `json:"upstream"`
}

// targets returns v's enabled targets sorted by name.
func (v values) targets() []*target {
	var out []*target
	for _, name := range slices.Sorted(maps.Keys(v.Targets)) {
		if tg := v.Targets[name]; tg != nil && (tg.Enabled == nil || *tg.Enabled) {
			tg.Name = name
			out = append(out, tg)
		}
	}
	return out
}

// valuesOf decodes r's merged values; the defaults case gets the zones its
// --set gives.
func valuesOf(t *testing.T, r rendered) values {
	t.Helper()
	b, err := json.Marshal(r.merged(t))
	if err != nil {
		t.Fatal(err)
	}
	var v values
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	// The zones a case sets on the command line (the default target's, an
	// example's header's): targets.NAME.zones=JSON.
	for _, s := range r.set {
		key, val, _ := strings.Cut(s, "=")
		name, ok := strings.CutSuffix(strings.TrimPrefix(key, "targets."), ".zones")
		if !ok || !strings.HasPrefix(key, "targets.") || v.Targets[name] == nil {
			continue
		}
		if err := json.Unmarshal([]byte(val), &v.Targets[name].Zones); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return v
}

// TestWorkloadsRunLockedDown checks every Deployment of every render:
// non-root, read-only root filesystem, no privilege escalation, all
// capabilities dropped (CoreDNS may add back NET_BIND_SERVICE only),
// RuntimeDefault seccomp, resources set; and for the proxy no
// service-account token at all, at least two replicas spread by hostname,
// and its probes on the health port.
func TestWorkloadsRunLockedDown(t *testing.T) {
	for _, r := range renderAll(t) {
		deployments := all[*appsv1.Deployment](r.objs)
		if find[*appsv1.Deployment](r.objs, proxyName) == nil {
			t.Errorf("%s: no %s Deployment", r.name, proxyName)
		}
		for _, d := range deployments {
			t.Run(r.name+"/"+d.Name, func(t *testing.T) {
				checkLockedDown(t, r.objs, d)
			})
		}
	}
}

func checkLockedDown(t *testing.T, objs []apiruntime.Object, d *appsv1.Deployment) {
	pod := d.Spec.Template.Spec
	psc := pod.SecurityContext
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod seccompProfile is not RuntimeDefault")
	}
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
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
			if d.Name == tenantCoreDNSName {
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
	if d.Name != proxyName {
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
	sa := find[*corev1.ServiceAccount](objs, pod.ServiceAccountName)
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
	for _, tsc := range pod.TopologySpreadConstraints {
		if tsc.LabelSelector == nil || !selects(tsc.LabelSelector.MatchLabels, d.Spec.Template.Labels) {
			t.Errorf("topology spread constraint %s does not select the proxy pods", tsc.TopologyKey)
		}
	}
	c := pod.Containers[0]
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port.String() != healthPortName {
		t.Errorf("proxy readiness probe %+v; want GET /readyz on %s", p, healthPortName)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.String() != healthPortName {
		t.Errorf("proxy liveness probe %+v; want GET /healthz on %s", p, healthPortName)
	}
}

// selects reports whether every label of selector is in labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
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

// flatten turns rules into sorted "group/resource verbs[ names=N,...]"
// strings.
func flatten(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		verbs := slices.Clone(r.Verbs)
		slices.Sort(verbs)
		names := ""
		if len(r.ResourceNames) > 0 {
			names = " names=" + strings.Join(r.ResourceNames, ",")
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				out = append(out, g+"/"+res+" "+strings.Join(verbs, ",")+names)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestRBACIsReadOnlyAndMinimal checks every (Cluster)Role of every render:
// only get/list/watch, no wildcards, no non-resource URLs, and exactly the
// rules the plugin needs, resource names included. Gateway API rules appear
// exactly when rbac.gatewayAPI asks for them (auto: when a target selects
// Gateways); the kubernetes plugin's rules only in tenant mode; every
// binding's subject is the CoreDNS service account of the values.
func TestRBACIsReadOnlyAndMinimal(t *testing.T) {
	readOnly := []string{"get", "list", "watch"}
	for _, r := range renderAll(t) {
		t.Run(r.name, func(t *testing.T) {
			v := valuesOf(t, r)
			var rules []rbacv1.PolicyRule
			for _, cr := range all[*rbacv1.ClusterRole](r.objs) {
				rules = append(rules, cr.Rules...)
			}
			for _, role := range all[*rbacv1.Role](r.objs) {
				rules = append(rules, role.Rules...)
			}
			for _, rule := range rules {
				for _, verb := range rule.Verbs {
					if !slices.Contains(readOnly, verb) {
						t.Errorf("rule %v grants verb %q", rule, verb)
					}
				}
				for _, list := range [][]string{rule.Verbs, rule.APIGroups, rule.Resources} {
					if slices.Contains(list, "*") {
						t.Errorf("rule %v has a wildcard", rule)
					}
				}
				if len(rule.NonResourceURLs) > 0 {
					t.Errorf("rule %v grants non-resource URLs", rule)
				}
			}

			wantGateway := v.RBAC.GatewayAPI == true
			if v.RBAC.GatewayAPI == "auto" {
				for _, tg := range v.targets() {
					wantGateway = wantGateway || len(tg.GatewayClasses) > 0 || len(tg.Gateways) > 0
				}
			}
			hairpin := []string{"networking.k8s.io/ingressclasses get,list,watch", "networking.k8s.io/ingresses get,list,watch"}
			if wantGateway {
				for _, res := range []string{"gateways", "grpcroutes", "httproutes", "tlsroutes"} {
					hairpin = append(hairpin, gatewayGroup+"/"+res+" get,list,watch")
				}
				slices.Sort(hairpin)
			}
			wantRoles := map[string][]string{
				"ClusterRole hairpin-coredns": hairpin,
				// The targets, and their EndpointSlices: a target takes
				// hosts once its proxy has a ready endpoint.
				"Role " + releaseNamespace + "/hairpin-coredns-targets": {"/services get,list,watch", "discovery.k8s.io/endpointslices get,list,watch"},
				// The apiserver's own addresses: its Service's one EndpointSlice.
				"Role default/hairpin-coredns-apiserver": {"discovery.k8s.io/endpointslices get,list,watch names=kubernetes"},
			}
			// A direct target's named Service is watched in its namespace.
			for _, tg := range v.targets() {
				if tg.Direct != nil {
					wantRoles["Role "+tg.Direct.Namespace+"/hairpin-coredns-direct"] = []string{"/services get,list,watch"}
				}
			}
			if v.Tenant.Enabled {
				wantRoles["ClusterRole hairpin-coredns-kubernetes"] = []string{"/namespaces list,watch", "/services list,watch", "discovery.k8s.io/endpointslices list,watch"}
			}
			gotRoles := map[string][]string{}
			for _, cr := range all[*rbacv1.ClusterRole](r.objs) {
				gotRoles[kindOf(cr)] = flatten(cr.Rules)
			}
			for _, role := range all[*rbacv1.Role](r.objs) {
				gotRoles[kindOf(role)] = flatten(role.Rules)
			}
			if !maps.EqualFunc(gotRoles, wantRoles, slices.Equal) {
				t.Errorf("roles:\n  got  %v\n  want %v", gotRoles, wantRoles)
			}

			sa := v.CoreDNS.ServiceAccount
			check := func(kind, namespace string, subjects []rbacv1.Subject, ref rbacv1.RoleRef) {
				if len(subjects) != 1 || subjects[0].Kind != "ServiceAccount" || subjects[0].Name != sa.Name || subjects[0].Namespace != sa.Namespace {
					t.Errorf("%s binds %v; want only ServiceAccount %s/%s", kind, subjects, sa.Namespace, sa.Name)
				}
				key := ref.Kind + " " + ref.Name
				if ref.Kind == "Role" {
					key = "Role " + namespace + "/" + ref.Name
				}
				if _, ok := gotRoles[key]; !ok {
					t.Errorf("%s refers to %s %s, which the chart does not render", kind, ref.Kind, ref.Name)
				}
			}
			for _, b := range all[*rbacv1.ClusterRoleBinding](r.objs) {
				check(kindOf(b), "", b.Subjects, b.RoleRef)
			}
			for _, b := range all[*rbacv1.RoleBinding](r.objs) {
				check(kindOf(b), b.Namespace, b.Subjects, b.RoleRef)
			}
		})
	}
}

// checkDirectTarget checks a direct target's Service: only a carrier of
// the annotations (headless, no selector, no ports) naming its Service,
// and no proxy route of its name.
func checkDirectTarget(t *testing.T, tg *target, svc *corev1.Service, routes map[string]route) {
	t.Helper()
	if svc == nil {
		t.Errorf("direct target %s: no Service", tg.Name)
		return
	}
	if got, want := svc.Annotations[directServiceAnnot], tg.Direct.Namespace+"/"+tg.Direct.Name; got != want {
		t.Errorf("direct target %s: annotation %s = %q; want %q", tg.Name, directServiceAnnot, got, want)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Selector) > 0 || len(svc.Spec.Ports) > 0 {
		t.Errorf("direct target %s: Service clusterIP %q, selector %v, ports %v; want headless, none, none", tg.Name, svc.Spec.ClusterIP, svc.Spec.Selector, svc.Spec.Ports)
	}
	for name := range routes {
		if strings.HasPrefix(name, tg.Name+"-") {
			t.Errorf("direct target %s has the proxy route %s", tg.Name, name)
		}
	}
}

// route is one parsed --route of the proxy.
type route struct {
	listenPort, upstream, name, headerPort, destAddr string
}

// proxyRoutes parses the proxy container's --route args.
func proxyRoutes(t *testing.T, d *appsv1.Deployment) map[string]route {
	t.Helper()
	routes := map[string]route{}
	for _, arg := range d.Spec.Template.Spec.Containers[0].Args {
		v, ok := strings.CutPrefix(arg, "--route=")
		if !ok {
			continue
		}
		listen, rest, ok := strings.Cut(v, "=")
		if !ok || !strings.HasPrefix(listen, ":") {
			t.Fatalf("route %q: want :PORT=UPSTREAM,...", v)
		}
		parts := strings.Split(rest, ",")
		rt := route{listenPort: strings.TrimPrefix(listen, ":"), upstream: parts[0]}
		for _, opt := range parts[1:] {
			k, val, _ := strings.Cut(opt, "=")
			switch k {
			case "name":
				rt.name = val
			case "header-port":
				rt.headerPort = val
			case "dest-addr":
				rt.destAddr = val
			default:
				t.Errorf("route %q: unknown option %q", v, k)
			}
		}
		if _, dup := routes[rt.name]; dup {
			t.Errorf("two routes named %q", rt.name)
		}
		routes[rt.name] = rt
	}
	return routes
}

// flag returns the value of --NAME=VALUE in args, or "".
func flag(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// TestTargetsAreWired checks, for every render, that each values target
// became exactly what the docs promise: a target Service in
// the release namespace with the target label and the annotations, selecting
// the proxy pods, whose ports are the upstream's and lead to the route's
// container port; one proxy route per upstream port, to the absolute
// upstream name in the cluster domain, named TARGET-PORT, with its header
// port and destination address; NetworkPolicy admitting everyone on the
// route ports and letting the proxy out only to DNS and to each upstream's
// pods; and in tenant mode a Corefile that serves the cluster domain and
// discovers targets in the release namespace.
func TestTargetsAreWired(t *testing.T) {
	for _, r := range renderAll(t) {
		t.Run(r.name, func(t *testing.T) {
			checkTargets(t, r, valuesOf(t, r))
		})
	}
}

func checkTargets(t *testing.T, r rendered, v values) {
	d := find[*appsv1.Deployment](r.objs, proxyName)
	if !slices.ContainsFunc(v.targets(), func(tg *target) bool { return tg.Direct == nil }) {
		// Only direct targets: nothing for a proxy to do.
		if d != nil || find[*netv1.NetworkPolicy](r.objs, proxyName) != nil {
			t.Error("only direct targets, yet a proxy Deployment or NetworkPolicy")
		}
		for _, tg := range v.targets() {
			checkDirectTarget(t, tg, find[*corev1.Service](r.objs, tg.Name), nil)
		}
		return
	}
	if d == nil {
		t.Fatal("no proxy Deployment")
	}
	podLabels := d.Spec.Template.Labels
	container := d.Spec.Template.Spec.Containers[0]
	routes := proxyRoutes(t, d)
	containerPorts := map[int32]bool{}
	portNamed := map[string]int32{} // the container's named ports
	for _, p := range container.Ports {
		if p.Name != healthPortName {
			containerPorts[p.ContainerPort] = true
			if p.Name != "" {
				portNamed[p.Name] = p.ContainerPort
			}
		} else if p.ContainerPort != v.Proxy.HealthPort {
			t.Errorf("health port %d; want %d", p.ContainerPort, v.Proxy.HealthPort)
		}
	}
	if got, want := flag(container.Args, "proxy-protocol"), strconv.Itoa(v.Proxy.ProxyProtocol); got != want {
		t.Errorf("--proxy-protocol=%s; want %s", got, want)
	}
	if got, want := flag(container.Args, "health-addr"), fmt.Sprintf(":%d", v.Proxy.HealthPort); got != want {
		t.Errorf("--health-addr=%s; want %s", got, want)
	}
	if got, want := flag(container.Args, "dial-timeout"), v.Proxy.DialTimeout; got != want {
		t.Errorf("--dial-timeout=%s; want %s", got, want)
	}
	wantMaxConns := "" // the proxy's own default
	if v.Proxy.MaxConns != nil {
		wantMaxConns = strconv.Itoa(*v.Proxy.MaxConns)
	}
	if got, want := flag(container.Args, "max-conns"), wantMaxConns; got != want {
		t.Errorf("--max-conns=%s; want %s", got, want)
	}
	domain := v.ClusterDomain
	if domain == "" {
		domain = defaultClusterDomain
	}

	var wantIngressPorts []string
	wantEgress := map[string]string{} // namespace -> sorted "TCP/port"
	nTargetServices := 0
	for _, svc := range all[*corev1.Service](r.objs) {
		if _, ok := svc.Labels[targetLabel]; ok {
			nTargetServices++
		}
	}
	if nTargetServices != len(v.targets()) {
		t.Errorf("%d Services carry %s; want one per target (%d)", nTargetServices, targetLabel, len(v.targets()))
	}
	nRoutes := 0
	for _, tg := range v.targets() {
		svc := find[*corev1.Service](r.objs, tg.Name)
		if svc == nil {
			t.Errorf("target %s: no Service %s", tg.Name, tg.Name)
			continue
		}
		if svc.Namespace != releaseNamespace {
			t.Errorf("target %s: Service in %q; want the release namespace %q", tg.Name, svc.Namespace, releaseNamespace)
		}
		if _, ok := svc.Labels[targetLabel]; !ok {
			t.Errorf("target %s: Service lacks the label %s", tg.Name, targetLabel)
		}
		if svc.Spec.Type != corev1.ServiceTypeClusterIP {
			t.Errorf("target %s: Service type %q; want ClusterIP", tg.Name, svc.Spec.Type)
		}
		if tg.Direct == nil && !selects(svc.Spec.Selector, podLabels) {
			t.Errorf("target %s: selector %v does not select the proxy pods %v", tg.Name, svc.Spec.Selector, podLabels)
		}
		var direct []string
		if tg.Direct != nil {
			direct = []string{tg.Direct.Namespace + "/" + tg.Direct.Name}
		}
		for key, list := range map[string][]string{
			zonesAnnotation: tg.Zones, ingressClassesAnnot: tg.IngressClasses,
			gatewayClassesAnnot: tg.GatewayClasses, gatewaysAnnotation: tg.Gateways,
			directServiceAnnot: direct,
		} {
			got, ok := svc.Annotations[key]
			if want := strings.Join(list, ","); got != want || ok != (len(list) > 0) {
				t.Errorf("target %s: annotation %s = %q (set %v); want %q", tg.Name, key, got, ok, want)
			}
		}
		if tg.Direct != nil {
			checkDirectTarget(t, tg, svc, routes)
			continue
		}
		svcPorts := map[string]corev1.ServicePort{}
		for _, p := range svc.Spec.Ports {
			svcPorts[p.Name] = p
		}
		if len(svcPorts) != len(tg.Upstream.Ports) {
			t.Errorf("target %s: Service ports %v; want %d", tg.Name, svc.Spec.Ports, len(tg.Upstream.Ports))
		}
		var egress []string
		for _, p := range tg.Upstream.Ports {
			nRoutes++
			sp, ok := svcPorts[p.Name]
			// The targetPort is the name of the route's container port, so
			// that only proxy Pods serving the route are its endpoints.
			if !ok || sp.Port != p.Port || sp.TargetPort.Type != intstr.String || portNamed[sp.TargetPort.StrVal] != p.ContainerPort || sp.Protocol != corev1.ProtocolTCP {
				t.Errorf("target %s port %s: Service port %+v; want %d -> the name of container port %d/TCP", tg.Name, p.Name, sp, p.Port, p.ContainerPort)
			}
			if !containerPorts[p.ContainerPort] {
				t.Errorf("target %s port %s: the proxy container does not expose %d", tg.Name, p.Name, p.ContainerPort)
			}
			name := tg.Name + "-" + p.Name
			rt, ok := routes[name]
			if !ok {
				t.Errorf("no proxy route %s", name)
				continue
			}
			header := ""
			if p.HeaderPort != 0 {
				header = strconv.Itoa(int(p.HeaderPort))
			}
			want := route{
				listenPort: strconv.Itoa(int(p.ContainerPort)),
				upstream:   fmt.Sprintf("%s.%s.svc.%s.:%d", tg.Upstream.Name, tg.Upstream.Namespace, strings.TrimSuffix(domain, "."), p.Port),
				name:       name, headerPort: header, destAddr: tg.DestAddr,
			}
			if rt != want {
				t.Errorf("route %s: %+v; want %+v", name, rt, want)
			}
			wantIngressPorts = append(wantIngressPorts, strconv.Itoa(int(p.ContainerPort)))
			podPort := p.PodPort
			if podPort == 0 {
				podPort = p.Port
			}
			egress = append(egress, "TCP/"+strconv.Itoa(int(podPort)))
		}
		slices.Sort(egress)
		wantEgress[tg.Upstream.Namespace+" "+labelString(tg.Upstream.PodSelector)] = strings.Join(egress, ",")
	}
	if len(routes) != nRoutes || len(containerPorts) != nRoutes {
		t.Errorf("%d routes and %d route container ports; want %d, one per upstream port", len(routes), len(containerPorts), nRoutes)
	}

	np := find[*netv1.NetworkPolicy](r.objs, proxyName)
	if v.NetworkPolicy.Enabled != nil && !*v.NetworkPolicy.Enabled {
		if np != nil {
			t.Error("networkPolicy.enabled is false, yet the proxy NetworkPolicy is rendered")
		}
		return
	}
	if np == nil {
		t.Fatal("no proxy NetworkPolicy")
	}
	if !selects(np.Spec.PodSelector.MatchLabels, podLabels) {
		t.Errorf("NetworkPolicy selects %v, not the proxy pods", np.Spec.PodSelector.MatchLabels)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []netv1.PolicyType{netv1.PolicyTypeIngress, netv1.PolicyTypeEgress}) {
		t.Errorf("policyTypes %v; want Ingress and Egress", np.Spec.PolicyTypes)
	}
	var open []string
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if len(rule.From) == 0 {
				open = append(open, p.Port.String())
			} else if p.Port.IntVal != v.Proxy.HealthPort {
				t.Errorf("NetworkPolicy admits %v on %s; only the health port is for named peers", rule.From, p.Port.String())
			}
		}
	}
	// The ServiceMonitor's scrape comes from wherever Prometheus runs,
	// unless metricsFrom names it (issue 34, 7).
	if v.ServiceMonitor.Enabled && len(v.NetworkPolicy.MetricsFrom) == 0 {
		wantIngressPorts = append(wantIngressPorts, strconv.Itoa(int(v.Proxy.HealthPort)))
	}
	slices.Sort(open)
	slices.Sort(wantIngressPorts)
	if !slices.Equal(open, wantIngressPorts) {
		t.Errorf("NetworkPolicy admits everyone on %v; want exactly the route ports %v (and the health port with the ServiceMonitor on and no metricsFrom)", open, wantIngressPorts)
	}
	gotEgress := map[string]string{}
	dns := 0
	for _, rule := range np.Spec.Egress {
		var ports []string
		for _, p := range rule.Ports {
			ports = append(ports, string(*p.Protocol)+"/"+p.Port.String())
		}
		slices.Sort(ports)
		if strings.Join(ports, ",") == "TCP/53,UDP/53" {
			dns++
			continue
		}
		if len(rule.To) != 1 || rule.To[0].NamespaceSelector == nil || rule.To[0].PodSelector == nil || rule.To[0].IPBlock != nil {
			t.Errorf("egress rule %+v: want one peer with a namespace and a pod selector", rule)
			continue
		}
		ns := rule.To[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
		gotEgress[ns+" "+labelString(rule.To[0].PodSelector.MatchLabels)] = strings.Join(ports, ",")
	}
	if dns != 1 {
		t.Errorf("%d DNS egress rules; want 1", dns)
	}
	if !maps.Equal(gotEgress, wantEgress) {
		t.Errorf("NetworkPolicy egress %v; want %v (DNS and each upstream's pods only)", gotEgress, wantEgress)
	}

	if !v.Tenant.Enabled {
		if find[*corev1.ConfigMap](r.objs, tenantCoreDNSName) != nil || find[*appsv1.Deployment](r.objs, tenantCoreDNSName) != nil {
			t.Errorf("renders a CoreDNS outside tenant mode: the cluster's own is never touched")
		}
		return
	}
	cm := find[*corev1.ConfigMap](r.objs, tenantCoreDNSName)
	if cm == nil {
		t.Fatal("tenant mode renders no coredns ConfigMap")
	}
	corefile := cm.Data["Corefile"]
	if got := corefileDomain(corefile); got != strings.TrimSuffix(domain, ".") {
		t.Errorf("tenant Corefile serves %q; want the cluster domain %q", got, domain)
	}
	if !regexp.MustCompile(`(?m)^\s*hairpin\s*\{\s*\n\s*targets ` + releaseNamespace + `\s*\n\s*\}`).MatchString(corefile) {
		t.Errorf("tenant Corefile does not discover targets in %s:\n%s", releaseNamespace, corefile)
	}
	if svc := find[*corev1.Service](r.objs, "kube-dns"); svc == nil || svc.Spec.ClusterIP != v.Tenant.DNSServiceIP {
		t.Errorf("kube-dns Service %v; want clusterIP %s", svc, v.Tenant.DNSServiceIP)
	}
	cd := find[*appsv1.Deployment](r.objs, tenantCoreDNSName)
	if cd == nil || cd.Spec.Template.Spec.ServiceAccountName != v.CoreDNS.ServiceAccount.Name || cd.Namespace != v.CoreDNS.ServiceAccount.Namespace {
		t.Errorf("tenant CoreDNS does not run as %s/%s", v.CoreDNS.ServiceAccount.Namespace, v.CoreDNS.ServiceAccount.Name)
	}
}

// labelString renders a label map deterministically.
func labelString(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// corefileDomain returns the first zone of the Corefile's kubernetes plugin.
func corefileDomain(corefile string) string {
	m := regexp.MustCompile(`(?m)^\s*kubernetes\s+(\S+)`).FindStringSubmatch(corefile)
	if m == nil {
		return ""
	}
	return m[1]
}

// allUnstructured returns the objects of kind that client-go's scheme does
// not know (prometheus-operator's).
func allUnstructured(objs []apiruntime.Object, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range all[*unstructured.Unstructured](objs) {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

// equalJSON compares two decoded YAML/JSON values.
func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }
