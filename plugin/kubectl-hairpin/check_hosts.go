package kubectlhairpin

import (
	"fmt"
	"slices"
	"strings"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	core "k8s.io/api/core/v1"
)

// checkHosts says which hosts are not answered and why: outside their
// target's zones, no target selects their object, a conflict between
// targets, or a rewrite rule that renames them first. Names come from the API objects, counts from CoreDNS's metrics.
func checkHosts(f *Facts) []Check {
	if !f.TargetsRead {
		return nil
	}
	out := hostsOutsideZones(f)
	out = append(out, hostsUnselected(f)...)
	out = append(out, hostsConflicts(f)...)
	return append(out, hostsShadowed(f)...)
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

// countSuffix is " (CoreDNS counts 3 such hosts in all)", or "" when
// CoreDNS's metrics could not be read.
func countSuffix(n int, ok bool, what string) string {
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (CoreDNS counts %d %s in all)", n, what)
}

func hostsOutsideZones(f *Facts) []Check {
	count, counted := corednsCount(f, metricHostsRejected, "reason", rules.ReasonOutsideZones)
	var out []Check
	for _, t := range f.Targets {
		name := targetName(t)
		if t.Err != nil {
			continue
		}
		var hosts, objects []string
		for _, o := range f.HostObjects {
			if o.Selection.Name() != name {
				continue
			}
			for _, h := range o.Hosts {
				if f.TargetSet.Rejection(name, h) == rules.ReasonOutsideZones && !slices.Contains(hosts, hostName(h)) {
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
		out = append(out, newCheck(idHostsOutsideZones, Warn, "%s of target %s %s outside its zones (%s) and not answered: %s%s",
			plural(len(hosts), "host", "hosts"), name, verb(len(hosts), "is", "are"), strings.Join(hostNames(t.Spec.Zones), ", "), listed(hosts), countSuffix(count, counted, "hosts outside their zones")).
			on(serviceObject(t.Service)).on(objects...).
			hint("a host outside its target's zones is never answered (the hijack guard); if they are yours, add their zone: --set-json 'targets.%s.zones=%s'", chartName(name), jsonList(zones)))
	}
	if len(out) == 0 {
		if counted && count > 0 {
			return []Check{newCheck(idHostsOutsideZones, Warn, "CoreDNS counts %d hosts outside their targets' zones, but the API objects show none: CoreDNS's view differs (a Corefile `hairpin ZONES` or `namespaces`/`labels` filter?)", count).
				hint("CoreDNS logs each such host once: kubectl -n %s logs -l %s | grep 'outside the zones'", f.Options.CoreDNSNamespace, selectorString(f.KubeDNS.Spec.Selector))}
		}
		return []Check{newCheck(idHostsOutsideZones, OK, "every host of a selected object is inside its target's zones%s", countSuffix(count, counted, "hosts outside their zones"))}
	}
	return out
}

// unselected is the objects of one IngressClass or Gateway that name hosts
// and that no target selects.
type unselected struct {
	class          string      // the IngressClass, when gateway is nil
	gateway        *GatewayRef // the Gateway
	hosts, objects []string
}

func (u *unselected) String() string {
	switch {
	case u.gateway != nil:
		return fmt.Sprintf("Gateway %s (class %s)", u.gateway.Key(), u.gateway.Class)
	case u.class == "":
		return "no ingress class (and no default IngressClass)"
	}
	return fmt.Sprintf("ingress class %q", u.class)
}

func (u *unselected) matches(o HostObject) bool {
	if u.gateway != nil {
		return o.Gateway != nil && o.Gateway.Key() == u.gateway.Key()
	}
	return o.Gateway == nil && o.IngressClass == u.class
}

// objectKinds are the values of the kind label of metricUnselected.
func objectKinds() []string {
	kinds := make([]string, rules.KindCount)
	for k := range rules.KindCount {
		kinds[k] = k.String()
	}
	return kinds
}

func hostsUnselected(f *Facts) []Check {
	count, counted := corednsCount(f, metricUnselected, "kind", objectKinds()...)
	var groups []*unselected
	for _, o := range f.HostObjects {
		if o.Selection.Name() != "" {
			continue
		}
		i := slices.IndexFunc(groups, func(u *unselected) bool { return u.matches(o) })
		if i < 0 {
			groups = append(groups, &unselected{class: o.IngressClass, gateway: o.Gateway})
			i = len(groups) - 1
		}
		u := groups[i]
		u.objects = append(u.objects, o.Object)
		for _, h := range o.Hosts {
			if !slices.Contains(u.hosts, hostName(h)) {
				u.hosts = append(u.hosts, hostName(h))
			}
		}
	}
	if len(groups) == 0 {
		return []Check{newCheck(idHostsUnselected, OK, "every object that names hosts is selected by a target%s", countSuffix(count, counted, "unselected objects"))}
	}
	var out []Check
	for _, u := range groups {
		slices.Sort(u.hosts)
		c := newCheck(idHostsUnselected, Warn, "%s of %s %s hosts that no target selects, so they are not answered: %s%s",
			plural(len(u.objects), "object", "objects"), u, verb(len(u.objects), "names", "name"), listed(u.hosts), countSuffix(count, counted, "unselected objects")).on(u.objects...)
		ctrl := controllerOf(f, u.class, u.gateway)
		sel, name := chartTarget{IngressClasses: []string{u.class}}, u.class
		if u.gateway != nil {
			sel, name = chartTarget{Gateways: []string{u.gateway.Key()}}, u.gateway.Name
		}
		var upstream *core.Service
		if ctrl != nil {
			upstream = ctrl.Upstream
		}
		switch off := disabledFor(f, u.class, u.gateway); {
		case ctrl != nil && !judgeLBs(f.Dataplane, ctrl.LBs).needed:
			c.Status = OK
			c.Message = fmt.Sprintf("%s of %s %s hosts that no target selects, and need none: %s", plural(len(u.objects), "object", "objects"), u, verb(len(u.objects), "names", "name"), judgeLBs(f.Dataplane, ctrl.LBs).why)
		case len(off) > 0:
			c = c.hint("%s would select them but %s disabled: fix it (see its target-zones and target-annotations lines)", listed(off), verb(len(off), "is", "are"))
		case ctrl != nil:
			c = c.hint("its controller requires PROXY: %s", addTargetHint(f, name, sel, upstream, u.matches))
		default:
			c = c.hint("if its controller requires PROXY, %s; if it does not, nothing is wrong", addTargetHint(f, name, sel, upstream, u.matches))
		}
		out = append(out, c)
	}
	return out
}

// controllerOf is the controller found to require PROXY that serves class
// (or the Gateway g), if any.
func controllerOf(f *Facts, class string, g *GatewayRef) *Controller {
	for i := range f.Controllers {
		c := &f.Controllers[i]
		if g == nil && slices.Contains(c.IngressClasses, class) {
			return c
		}
		if g != nil && slices.ContainsFunc(c.Gateways, func(x GatewayRef) bool { return x.Key() == g.Key() }) {
			return c
		}
	}
	return nil
}

// answeredHosts are the hosts hairpin answers, each with the objects that
// name it: selected by a target, inside its zones.
func answeredHosts(f *Facts) map[string][]HostObject {
	byHost := map[string][]HostObject{}
	for _, o := range f.HostObjects {
		if o.Selection.Name() == "" {
			continue
		}
		for _, h := range o.Hosts {
			if f.TargetSet.Rejection(o.Selection.Name(), h) == "" {
				byHost[h] = append(byHost[h], o)
			}
		}
	}
	return byHost
}

func hostsConflicts(f *Facts) []Check {
	objCount, objCounted := corednsCount(f, metricConflicts, "kind", rules.ConflictObject)
	hostCount, _ := corednsCount(f, metricConflicts, "kind", rules.ConflictHost)
	var out []Check
	for _, o := range f.HostObjects {
		if o.Selection.Name() != "" && o.Selection.Conflict {
			out = append(out, newCheck(idHostsConflicts, Warn, "%s is selected by several targets; %s answers its hosts (the more specific selection wins: Gateway name, then class, then *, then the first name)", o.Object, o.Selection.Name()).
				on(o.Object, "service/"+o.Selection.Name()).
				hint("give each class or Gateway to one target: remove it from the other targets' targets.NAME.ingressClasses/gatewayClasses/gateways"))
		}
	}
	byHost := answeredHosts(f)
	var hosts []string
	for h, objs := range byHost {
		var targets []string
		for _, o := range objs {
			if !slices.Contains(targets, o.Selection.Name()) {
				targets = append(targets, o.Selection.Name())
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
			if !slices.Contains(targets, o.Selection.Name()) {
				targets = append(targets, o.Selection.Name())
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
