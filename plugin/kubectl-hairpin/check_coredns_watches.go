package kubectlhairpin

import (
	"fmt"
	"slices"
	"strings"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
)

func corednsKinds(f *Facts) Check {
	pods := scraped(f.CoreDNS)
	if len(pods) == 0 {
		return newCheck(idCoreDNSKinds, Warn, "the kinds hairpin watches were not checked: no CoreDNS pod's metrics could be read").hint("see coredns-metrics")
	}
	var unsynced, listing, erring, synced, objects []string
	gatewayKinds := false
	for _, p := range pods {
		objects = append(objects, podObject(p.Pod))
		p.Metrics.Each(metricKindSynced, func(s Sample) {
			kind := s.Labels["kind"]
			reasons := watchErrorReasons(p.Metrics, s.Labels["cache"], kind)
			switch {
			case s.Value == 0 && reasons == "":
				// Not listed and nothing failed: a watch that has just
				// started, as Gateway kinds do once a target needs them.
				listing = append(listing, fmt.Sprintf("%s in %s", kind, p.Pod.Name))
			case s.Value == 0:
				unsynced = append(unsynced, fmt.Sprintf("%s in %s%s", kind, p.Pod.Name, reasons))
				gatewayKinds = gatewayKinds || !slices.Contains([]string{"ingress", "ingressclass", "service", "endpointslice"}, kind)
			case reasons != "":
				erring = append(erring, fmt.Sprintf("%s in %s%s", kind, p.Pod.Name, reasons))
			default:
				synced = append(synced, kind)
			}
		})
	}
	slices.Sort(synced)
	synced = slices.Compact(synced)
	rbac := "keep rbac.create=true, and set coredns.serviceAccount.namespace and .name to the ServiceAccount CoreDNS runs as"
	if gatewayKinds {
		rbac = "grant CoreDNS the Gateway API kinds with --set rbac.gatewayAPI=true (auto grants them only when a target selects Gateways), and install the Gateway API CRDs; " + rbac
	}
	switch {
	case len(unsynced) > 0:
		return newCheck(idCoreDNSKinds, Fail, "hairpin has not listed %s: their hosts are not answered", listed(unsynced)).on(objects...).hint("%s", rbac)
	case len(listing) > 0:
		return newCheck(idCoreDNSKinds, Warn, "hairpin has not listed %s yet, and no list or watch has failed: their hosts are answered once they have", listed(listing)).on(objects...).
			hint("re-run in a moment; if it stays, CoreDNS's log says what it waits for: kubectl -n %s logs %s | grep plugin/hairpin", f.Options.CoreDNSNamespace, pods[0].Pod.Name)
	case len(erring) > 0:
		return newCheck(idCoreDNSKinds, Warn, "every watched kind has listed, but watches failed since CoreDNS started: %s", listed(erring)).on(objects...).
			hint("a past failure (the apiserver restarted, RBAC was applied late) is harmless once listed; if it keeps rising, %s", rbac)
	case len(synced) == 0 && hairpinUnneeded(f):
		return newCheck(idCoreDNSKinds, OK, "hairpin watches no kind, and needs not: %s", unneededReason).on(objects...)
	case len(synced) == 0:
		return newCheck(idCoreDNSKinds, Warn, "hairpin watches no kind (no coredns_hairpin_kind_synced series)").on(objects...).hint("see coredns-activation")
	}
	return newCheck(idCoreDNSKinds, OK, "hairpin has listed every kind it watches: %s", strings.Join(synced, ", ")).on(objects...)
}

// watchErrorReasons is " (watch errors: forbidden 3)" for one kind of one
// cache, or "".
func watchErrorReasons(m Samples, cache, kind string) string {
	var parts []string
	m.Each(metricWatchErrors, func(s Sample) {
		if s.Value > 0 {
			parts = append(parts, fmt.Sprintf("%s %g", s.Labels["reason"], s.Value))
		}
	}, "cache", cache, "kind", kind)
	if len(parts) == 0 {
		return ""
	}
	slices.Sort(parts)
	return " (watch errors: " + strings.Join(parts, ", ") + ")"
}

// perCache returns the values of a gauge by its label, from the cache
// with the most series: several server blocks with the same settings
// share one cache, and one with other settings has its own view.
func perCache(m Samples, name, label string) map[string]float64 {
	byCache := map[string]map[string]float64{}
	m.Each(name, func(s Sample) {
		c := s.Labels["cache"]
		if byCache[c] == nil {
			byCache[c] = map[string]float64{}
		}
		byCache[c][s.Labels[label]] += s.Value
	})
	var best map[string]float64
	bestTotal := -1.0
	for _, vals := range byCache {
		total := 0.0
		for _, v := range vals {
			total += v
		}
		if total > bestTotal {
			best, bestTotal = vals, total
		}
	}
	return best
}

func corednsTargets(f *Facts) Check {
	pods := scraped(f.CoreDNS)
	if len(pods) == 0 {
		return newCheck(idCoreDNSTargets, Warn, "the targets CoreDNS sees were not checked: no CoreDNS pod's metrics could be read").hint("see coredns-metrics")
	}
	enabled := 0
	for _, t := range f.Targets {
		if t.Err == nil {
			enabled++
		}
	}
	var objects []string
	for _, p := range pods {
		objects = append(objects, podObject(p.Pod))
		st := perCache(p.Metrics, metricTargets, "state")
		serving, noAddr, disabled, waiting := int(st[rules.StateServing]), int(st[rules.StateNoAddresses]), int(st[rules.StateDisabled]), int(st[rules.StateWaiting])
		switch {
		case disabled > 0:
			return newCheck(idCoreDNSTargets, Fail, "CoreDNS pod %s has %s", p.Pod.Name, plural(disabled, "disabled target", "disabled targets")).on(objects...).
				hint("see the target-annotations and target-zones lines; CoreDNS logs `target NS/NAME is disabled: ...` naming the annotation")
		case noAddr > 0:
			return newCheck(idCoreDNSTargets, Fail, "CoreDNS pod %s has %s without a ClusterIP: their hosts pass through", p.Pod.Name, plural(noAddr, "target", "targets")).on(objects...).
				hint("see the target-address lines")
		case waiting > 0:
			return newCheck(idCoreDNSTargets, Warn, "CoreDNS pod %s has %s for a ready endpoint: their hosts are answered as if they did not exist", p.Pod.Name, plural(waiting, "target waiting", "targets waiting")).on(objects...).
				hint("see the target-endpoints lines; a target takes its hosts once its proxy is ready on each of its ports")
		case f.TargetsRead && serving+noAddr+disabled+waiting == 0 && len(f.Targets) > 0:
			return newCheck(idCoreDNSTargets, Fail, "CoreDNS pod %s sees no targets, but %s holds %d", p.Pod.Name, f.Options.TargetsNamespace, len(f.Targets)).on(objects...).
				hint("a bare hairpin line discovers targets in %s; a Corefile `targets NAMESPACE` must name the namespace the chart installed into (and --namespace here too)", DefaultTargetsNamespace)
		case f.TargetsRead && serving != enabled:
			return newCheck(idCoreDNSTargets, Warn, "CoreDNS pod %s serves %d targets, %s has %d enabled", p.Pod.Name, serving, f.Options.TargetsNamespace, enabled).on(objects...).
				hint("a target was just added or removed (re-run), or CoreDNS discovers targets in another namespace (`targets NAMESPACE` in its Corefile)")
		}
	}
	return newCheck(idCoreDNSTargets, OK, "CoreDNS serves %s (from each pod's metrics)", plural(enabled, "target", "targets")).on(objects...)
}
