package hairpin

import (
	networking "k8s.io/api/networking/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

// This file is the plugin's rules for tools that explain, from the API
// objects, what CoreDNS answers and why (kubectl-hairpin check): the same
// parsing and selection as the informers', without a cache. It is kept
// small on purpose; everything here wraps the code that serves queries.

// The target keys of DESIGN.md's "Targets" table.
const (
	// TargetLabel marks a Service as a target.
	TargetLabel = targetLabel
	// ZonesAnnotation lists the zones a target may answer.
	ZonesAnnotation = zonesAnnotation
	// IngressClassesAnnotation lists the Ingress classes a target fronts.
	IngressClassesAnnotation = ingressClassesAnnotation
	// GatewayClassesAnnotation lists the GatewayClasses a target fronts.
	GatewayClassesAnnotation = gatewayClassesAnnotation
	// GatewaysAnnotation lists the Gateways (namespace/name) a target fronts.
	GatewaysAnnotation = gatewaysAnnotation
)

// Why a host that a selected object names is not answered.
const (
	// ReasonOutsideZones: the host is outside its target's zones.
	ReasonOutsideZones = reasonOutsideZones
	// ReasonInvalid: the host is not a DNS name.
	ReasonInvalid = reasonInvalid
)

// ErrNoZones is the error of a target whose zones annotation is missing or
// empty.
var ErrNoZones = errNoZones

// Targets is a set of targets as the plugin reads them from their Services.
type Targets struct{ ts targets }

// TargetSpec is what a target's annotations select.
type TargetSpec struct {
	Zones          []string // lowercase FQDNs, sorted
	IngressClasses []string // sorted; "*" for every class
	GatewayClasses []string // sorted; "*" for every class
	Gateways       []string // sorted namespace/name
}

// Selection is the target chosen for one object: Target is "" when no
// enabled target selects it, Conflict is true when several do (Target won).
type Selection struct {
	Target   string
	Conflict bool
}

// NewTargets returns an empty set.
func NewTargets() *Targets { return &Targets{ts: targets{}} }

// Add reads a target Service's annotations under name. A target whose
// annotations do not parse, or that names no zones, is kept but disabled,
// as in the plugin, and the error says why.
func (t *Targets) Add(name string, annotations map[string]string) (TargetSpec, error) {
	sel := parseTargetAnnotations(annotations)
	t.ts[name] = newTarget(name, sel)
	return TargetSpec{Zones: sel.zones, IngressClasses: sel.ingressClasses, GatewayClasses: sel.gatewayClasses, Gateways: sel.gateways}, sel.err
}

// ForIngress chooses the target of an Ingress of class.
func (t *Targets) ForIngress(class string) Selection { return exported(t.ts.forIngress(class)) }

// ForGateway chooses the target of a Gateway, by name first, then by class.
func (t *Targets) ForGateway(namespace, name, class string) Selection {
	return exported(t.ts.forGateway(namespace, name, class))
}

// Rejection returns why target does not answer host: "" when it does (or
// the target is unknown), else ReasonOutsideZones or ReasonInvalid.
func (t *Targets) Rejection(target, host string) string {
	tg, ok := t.ts[target]
	if !ok {
		return ""
	}
	_, rejected := classifyHosts([]string{host}, []string{"."}, tg.sel.zones)
	if len(rejected) == 0 {
		return ""
	}
	return rejected[0].reason
}

func exported(s selection) Selection {
	if s.target == nil {
		return Selection{}
	}
	return Selection{Target: s.target.name, Conflict: s.conflict}
}

// IngressHosts returns the hosts an Ingress contributes (its rules' hosts,
// never its TLS hosts), as lowercase FQDNs.
func IngressHosts(ing *networking.Ingress) []string { return slimIngress(ing).hosts }

// IngressClass returns the class of an Ingress: spec.ingressClassName, else
// the legacy annotation, else the cluster's default class among classes.
func IngressClass(ing *networking.Ingress, classes []networking.IngressClass) string {
	cached := make([]*cachedIngressClass, 0, len(classes))
	for i := range classes {
		if c, ok := must(newCachedIngressClass(&classes[i])).(*cachedIngressClass); ok {
			cached = append(cached, c)
		}
	}
	return slimIngress(ing).classOf(defaultIngressClass(cached))
}

// slimIngress is what the plugin's Ingress watch keeps of ing.
func slimIngress(ing *networking.Ingress) *ingressEntry {
	everything := func(map[string]string) bool { return true }
	e, _ := must(newIngressEntry(everything, newInterner(0))(ing)).(*ingressEntry)
	if e == nil {
		return &ingressEntry{}
	}
	return e
}

// GatewayHosts returns the hostnames of a Gateway's listeners.
func GatewayHosts(g *gw.Gateway) []string { return slimGateway(g).listenerHostnames() }

// RouteHosts returns, per Gateway that a route attaches to and that lookup
// finds, the hostnames the route serves through it (listener and route
// hostnames intersected, allowedRoutes applied), keyed by the Gateway's
// namespace/name. route is an HTTPRoute, GRPCRoute or TLSRoute of any
// version the plugin watches; other objects yield nothing.
func RouteHosts(route any, lookup func(namespace, name string) *gw.Gateway) map[string][]string {
	r, ok := must(slimGatewayAPI(false)(route)).(*slimRoute)
	if !ok {
		return nil
	}
	out := map[string][]string{}
	for _, gh := range routeHostnames(r.view, func(ns, name string) *cachedGateway {
		if g := lookup(ns, name); g != nil {
			return slimGateway(g)
		}
		return nil
	}) {
		out[gh.gateway.key()] = append(out[gh.gateway.key()], gh.hosts...)
	}
	return out
}

func slimGateway(g *gw.Gateway) *cachedGateway {
	c, _ := must(slimGatewayAPI(false)(g)).(*cachedGateway)
	if c == nil {
		return &cachedGateway{}
	}
	return c
}

// must drops the error of an informer transform, which never fails.
func must(obj any, _ error) any { return obj }
