package kubectlhairpin

import (
	"fmt"
	"slices"
	"strings"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin"

	core "k8s.io/api/core/v1"
)

// checkHosts says which hosts are not answered and why: outside their
// target's zones, no target selects their object, or a conflict between
// targets. Names come from the API objects, counts from CoreDNS's metrics.
func checkHosts(f *Facts) []Check {
	if !f.TargetsRead {
		return nil
	}
	out := hostsOutsideZones(f)
	out = append(out, hostsUnselected(f)...)
	return append(out, hostsConflicts(f)...)
}

// corednsCount is what CoreDNS's first scraped pod counts for a gauge and
// label values, and whether it was read.
func corednsCount(f *Facts, name, label string, values ...string) (int, bool) {
	pods := scraped(f.CoreDNS)
	if len(pods) == 0 {
		return 0, false
	}
	by := perCache(pods[0].Metrics, name, label)
	n := 0.0
	for _, v := range values {
		n += by[v]
	}
	return int(n), true
}

func countSuffix(n int, ok bool) string {
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (CoreDNS counts %d)", n)
}

func hostsOutsideZones(f *Facts) []Check {
	count, counted := corednsCount(f, metricHostsRejected, "reason", hairpin.ReasonOutsideZones)
	var out []Check
	for _, t := range f.Targets {
		name := targetName(t)
		if t.Err != nil {
			continue
		}
		var hosts, objects []string
		for _, o := range f.HostObjects {
			if o.Selection.Target != name {
				continue
			}
			for _, h := range o.Hosts {
				if f.TargetSet.Rejection(name, h) == hairpin.ReasonOutsideZones && !slices.Contains(hosts, hostName(h)) {
					hosts = append(hosts, hostName(h))
					objects = append(objects, o.Object)
				}
			}
		}
		if len(hosts) == 0 {
			continue
		}
		slices.Sort(hosts)
		zones := hostNames(t.Spec.Zones)
		for _, h := range hosts {
			if z, ok := parentZone(h); ok && !slices.Contains(zones, z) {
				zones = append(zones, z)
			}
		}
		out = append(out, newCheck(idHostsOutsideZones, Warn, "%s of target %s are outside its zones (%s) and are not answered: %s%s",
			plural(len(hosts), "host", "hosts"), name, strings.Join(hostNames(t.Spec.Zones), ", "), listed(hosts), countSuffix(count, counted)).
			on(serviceObject(t.Service)).on(objects...).
			hint("a host outside its target's zones is never answered (the hijack guard); if they are yours, add their zone: --set-json 'targets.%s.zones=%s'", chartName(name), jsonList(zones)))
	}
	if len(out) == 0 {
		if counted && count > 0 {
			return []Check{newCheck(idHostsOutsideZones, Warn, "CoreDNS counts %d hosts outside their targets' zones, but the API objects show none: CoreDNS's view differs (a Corefile `hairpin ZONES` or `namespaces`/`labels` filter?)", count).
				hint("CoreDNS logs each such host once: kubectl -n %s logs -l %s | grep 'outside the zones'", f.Options.CoreDNSNamespace, selectorString(f.KubeDNS.Spec.Selector))}
		}
		return []Check{newCheck(idHostsOutsideZones, OK, "every host of a selected object is inside its target's zones%s", countSuffix(count, counted))}
	}
	return out
}

func hostsUnselected(f *Facts) []Check {
	count, counted := corednsCount(f, metricUnselected, "kind", "ingress", "gateway", "httproute", "grpcroute", "tlsroute")
	type group struct {
		what, hintName string
		sel            chartTarget
		match          func(HostObject) bool
		hosts, objects []string
	}
	var groups []*group
	find := func(what string) *group {
		for _, g := range groups {
			if g.what == what {
				return g
			}
		}
		return nil
	}
	for _, o := range f.HostObjects {
		if o.Selection.Target != "" {
			continue
		}
		var what string
		var g *group
		if o.Gateway != nil {
			ref := *o.Gateway
			what = fmt.Sprintf("Gateway %s (class %s)", ref.Key(), ref.Class)
			if g = find(what); g == nil {
				g = &group{what: what, hintName: ref.Name, sel: chartTarget{Gateways: []string{ref.Key()}},
					match: func(h HostObject) bool { return h.Gateway != nil && h.Gateway.Key() == ref.Key() }}
			}
		} else {
			class := o.IngressClass
			what = fmt.Sprintf("ingress class %q", class)
			if class == "" {
				what = "no ingress class (and no default IngressClass)"
			}
			if g = find(what); g == nil {
				g = &group{what: what, hintName: class, sel: chartTarget{IngressClasses: []string{class}},
					match: func(h HostObject) bool { return h.Gateway == nil && h.IngressClass == class }}
			}
		}
		if find(what) == nil {
			groups = append(groups, g)
		}
		g.objects = append(g.objects, o.Object)
		for _, h := range o.Hosts {
			if !slices.Contains(g.hosts, hostName(h)) {
				g.hosts = append(g.hosts, hostName(h))
			}
		}
	}
	if len(groups) == 0 {
		return []Check{newCheck(idHostsUnselected, OK, "every object that names hosts is selected by a target%s", countSuffix(count, counted))}
	}
	var out []Check
	for _, g := range groups {
		slices.Sort(g.hosts)
		fix := "if its controller requires PROXY, " + addTargetHint(f, g.hintName, g.sel, upstreamFor(f, g.sel), g.match) + "; if it does not, nothing is wrong"
		out = append(out, newCheck(idHostsUnselected, Warn, "%s of %s name hosts that no target selects, so they are not answered: %s%s",
			plural(len(g.objects), "object", "objects"), g.what, listed(g.hosts), countSuffix(count, counted)).on(g.objects...).hint("%s", fix))
	}
	return out
}

// upstreamFor is the Service of the controller that serves sel's class or
// Gateway, when one was found.
func upstreamFor(f *Facts, sel chartTarget) *core.Service {
	for _, c := range f.Controllers {
		for _, class := range sel.IngressClasses {
			if slices.Contains(c.IngressClasses, class) {
				return c.Upstream
			}
		}
		for _, key := range sel.Gateways {
			if slices.ContainsFunc(c.Gateways, func(g GatewayRef) bool { return g.Key() == key }) {
				return c.Upstream
			}
		}
	}
	return nil
}

func hostsConflicts(f *Facts) []Check {
	objCount, objCounted := corednsCount(f, metricConflicts, "kind", "object")
	hostCount, _ := corednsCount(f, metricConflicts, "kind", "host")
	var out []Check
	byHost := map[string][]HostObject{}
	for _, o := range f.HostObjects {
		if o.Selection.Target == "" {
			continue
		}
		if o.Selection.Conflict {
			out = append(out, newCheck(idHostsConflicts, Warn, "%s is selected by several targets; %s answers its hosts (the more specific selection wins: Gateway name, then class, then *, then the first name)", o.Object, o.Selection.Target).
				on(o.Object, "service/"+o.Selection.Target).
				hint("give each class or Gateway to one target: remove it from the other targets' targets.NAME.ingressClasses/gatewayClasses/gateways"))
		}
		for _, h := range o.Hosts {
			if f.TargetSet.Rejection(o.Selection.Target, h) == "" {
				byHost[h] = append(byHost[h], o)
			}
		}
	}
	var hosts []string
	for h, objs := range byHost {
		var targets []string
		for _, o := range objs {
			if !slices.Contains(targets, o.Selection.Target) {
				targets = append(targets, o.Selection.Target)
			}
		}
		if len(targets) > 1 {
			hosts = append(hosts, h)
		}
	}
	slices.Sort(hosts)
	for _, h := range hosts {
		var objects, targets []string
		for _, o := range byHost[h] {
			objects = append(objects, o.Object)
			if !slices.Contains(targets, o.Selection.Target) {
				targets = append(targets, o.Selection.Target)
			}
		}
		slices.Sort(targets)
		out = append(out, newCheck(idHostsConflicts, Warn, "host %s is named by objects on different targets (%s); one of them answers it", hostName(h), strings.Join(targets, ", ")).on(objects...).
			hint("a host belongs to one controller: remove it from all but one of %s", listed(objects)))
	}
	if len(out) == 0 {
		suffix := ""
		if objCounted {
			suffix = fmt.Sprintf(" (CoreDNS counts %d object and %d host conflicts)", objCount, hostCount)
		}
		return []Check{newCheck(idHostsConflicts, OK, "no object is selected by several targets, and no host by objects on different targets%s", suffix)}
	}
	return out
}
