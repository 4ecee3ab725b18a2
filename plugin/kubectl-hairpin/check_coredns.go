package kubectlhairpin

import (
	"fmt"
	"slices"
	"strings"

	core "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Names of the CoreDNS metrics read here (plugin/hairpin/metrics.go, and
// CoreDNS's own coredns_plugin_enabled, set per server block by the
// prometheus plugin).
const (
	metricPluginEnabled  = "coredns_plugin_enabled"
	metricHairpinPrefix  = "coredns_hairpin_"
	metricKindSynced     = "coredns_hairpin_kind_synced"
	metricWatchErrors    = "coredns_hairpin_watch_errors_total"
	metricTargets        = "coredns_hairpin_targets"
	metricHostsRejected  = "coredns_hairpin_hosts_rejected"
	metricUnselected     = "coredns_hairpin_unselected_objects"
	metricConflicts      = "coredns_hairpin_conflicts"
	ourImage             = "ghcr.io/coredns-hairpin/coredns"
	ourImageMark         = "coredns-hairpin"
	hairpinPluginName    = "hairpin"
	kubernetesPluginName = "kubernetes"
)

// checkCoreDNS judges the pods behind kube-dns and their metrics.
func checkCoreDNS(f *Facts) []Check {
	if !f.KubeDNSRead {
		return []Check{newCheck(idCoreDNSPods, Warn, "CoreDNS was not checked: its Service %s/%s could not be read", f.Options.CoreDNSNamespace, kubeDNS).
			hint("grant get on services in %s", f.Options.CoreDNSNamespace)}
	}
	pods := corednsPods(f)
	if pods.Status != OK {
		return []Check{pods}
	}
	return []Check{pods, corednsMetrics(f), corednsImage(f), corednsActivation(f), corednsKinds(f), corednsTargets(f)}
}

func kubeDNSObject(f *Facts) string {
	return "service/" + f.Options.CoreDNSNamespace + "/" + kubeDNS
}

func podObject(p *core.Pod) string { return "pod/" + p.Namespace + "/" + p.Name }

func corednsPods(f *Facts) Check {
	svc := kubeDNSObject(f)
	ns := f.Options.CoreDNSNamespace
	switch {
	case f.KubeDNS == nil:
		return newCheck(idCoreDNSPods, Fail, "the cluster DNS Service %s/%s does not exist", ns, kubeDNS).
			hint("pass --coredns-namespace if CoreDNS runs elsewhere; a cluster without CoreDNS can run the chart's own (--set tenant.enabled=true)")
	case len(f.KubeDNS.Spec.Selector) == 0:
		return newCheck(idCoreDNSPods, Fail, "%s/%s selects no pods (it has no selector)", ns, kubeDNS).on(svc).
			hint("point the Service at the CoreDNS pods; its selector is how hairpin finds them")
	case !f.CoreDNSPodsRead:
		return newCheck(idCoreDNSPods, Warn, "CoreDNS's pods were not checked: the pods in %s could not be listed", ns).on(svc).
			hint("see cluster-access")
	case len(f.CoreDNS) == 0:
		return newCheck(idCoreDNSPods, Fail, "%s/%s selects no pods", ns, kubeDNS).on(svc).
			hint("kubectl -n %s get deploy,pods -l %s", ns, selectorString(f.KubeDNS.Spec.Selector))
	}
	ready := 0
	var images, objects []string
	for _, p := range f.CoreDNS {
		if podReady(p.Pod) {
			ready++
		}
		objects = append(objects, podObject(p.Pod))
		for _, img := range corednsImages(p.Pod) {
			if !slices.Contains(images, img) {
				images = append(images, img)
			}
		}
	}
	c := newCheck(idCoreDNSPods, OK, "CoreDNS runs behind %s/%s: %d/%d pods ready, image %s", ns, kubeDNS, ready, len(f.CoreDNS), listed(images)).on(svc).on(objects...)
	switch {
	case ready == 0:
		c.Status = Fail
		c = c.hint("no CoreDNS pod is ready: kubectl -n %s describe pods -l %s", ns, selectorString(f.KubeDNS.Spec.Selector))
	case ready < len(f.CoreDNS):
		c.Status = Warn
		c = c.hint("some CoreDNS pods are not ready: kubectl -n %s describe pods -l %s", ns, selectorString(f.KubeDNS.Spec.Selector))
	}
	return c
}

func podReady(p *core.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c core.PodCondition) bool {
		return c.Type == core.PodReady && c.Status == core.ConditionTrue
	})
}

// corednsImages are the images of the pod's containers that serve DNS:
// the one named coredns, else all.
func corednsImages(p *core.Pod) []string {
	var all []string
	for _, c := range p.Spec.Containers {
		if c.Name == "coredns" {
			return []string{c.Image}
		}
		all = append(all, c.Image)
	}
	return all
}

func selectorString(sel map[string]string) string {
	keys := make([]string, 0, len(sel))
	for k, v := range sel {
		keys = append(keys, k+"="+v)
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

// scraped are the pods whose metrics were read.
func scraped(pods []PodFacts) []PodFacts {
	var out []PodFacts
	for _, p := range pods {
		if p.Err == nil && p.Metrics != nil {
			out = append(out, p)
		}
	}
	return out
}

func corednsMetrics(f *Facts) Check {
	var failed, forbidden []string
	var objects []string
	read, port := 0, int32(defaultCoreDNSMetricsPort)
	for _, p := range f.CoreDNS {
		objects = append(objects, podObject(p.Pod))
		switch {
		case p.Err == nil:
			read++
		case apierrors.IsForbidden(p.Err):
			forbidden = append(forbidden, p.Pod.Name)
			port = p.Port
		default:
			failed = append(failed, fmt.Sprintf("%s: %v", p.Pod.Name, p.Err))
		}
	}
	ns := f.Options.CoreDNSNamespace
	switch {
	case len(forbidden) > 0:
		return newCheck(idCoreDNSMetrics, Warn, "may not read CoreDNS's metrics (get pods/proxy in %s is forbidden), so activation, synced kinds and CoreDNS's own counts are not checked", ns).on(objects...).
			hint("grant get on pods/proxy in %s, or read them by hand: kubectl -n %s port-forward pod/%s %d & curl -s localhost:%d/metrics | grep %s", ns, ns, forbidden[0], port, port, metricHairpinPrefix)
	case len(failed) > 0:
		return newCheck(idCoreDNSMetrics, Warn, "could not read the metrics of %d of %d CoreDNS pods through the apiserver's pod proxy: %s", len(failed), len(f.CoreDNS), listed(failed)).on(objects...).
			hint("the Corefile needs `prometheus :%d` (the pod's port named metrics), and the apiserver must reach the pod", defaultCoreDNSMetricsPort)
	}
	return newCheck(idCoreDNSMetrics, OK, "read the metrics of %d/%d CoreDNS pods through the apiserver's pod proxy", read, len(f.CoreDNS)).on(objects...)
}

// runsHairpin reports whether a scrape shows the hairpin plugin at work.
func runsHairpin(m Samples) bool {
	if _, ok := m.Sum(metricPluginEnabled, "name", hairpinPluginName); ok {
		return true
	}
	return m.HasPrefix(metricHairpinPrefix)
}

func corednsImage(f *Facts) Check {
	var without, unknown, objects, images []string
	for _, p := range f.CoreDNS {
		objects = append(objects, podObject(p.Pod))
		imgs := corednsImages(p.Pod)
		images = append(images, imgs...)
		byName := slices.ContainsFunc(imgs, func(i string) bool { return strings.Contains(i, ourImageMark) })
		switch {
		case p.Metrics != nil && runsHairpin(p.Metrics), byName:
		case p.Metrics != nil:
			without = append(without, p.Pod.Name+" ("+strings.Join(imgs, ", ")+")")
		default:
			unknown = append(unknown, p.Pod.Name+" ("+strings.Join(imgs, ", ")+")")
		}
	}
	slices.Sort(images)
	images = slices.Compact(images)
	tag := "VERSION"
	if f.Options.Version != "" && f.Options.Version != "dev" {
		tag = f.Options.Version
	}
	pin := fmt.Sprintf("pin our image in your distribution's own config (docs/install.md), e.g. kubectl -n %s set image deploy/coredns coredns=%s:%s", f.Options.CoreDNSNamespace, ourImage, tag)
	switch {
	case len(without) > 0:
		return newCheck(idCoreDNSImage, Fail, "CoreDNS does not run a hairpin build: %s shows no hairpin plugin in its metrics", listed(without)).on(objects...).hint("%s", pin)
	case len(unknown) > 0:
		return newCheck(idCoreDNSImage, Warn, "cannot tell whether CoreDNS runs a hairpin build: %s is not our image by name and its metrics could not be read", listed(unknown)).on(objects...).hint("%s; or make the metrics readable (see coredns-metrics)", pin)
	}
	return newCheck(idCoreDNSImage, OK, "CoreDNS runs a hairpin build (%s)", listed(images)).on(objects...)
}

// blockKey names one server block in coredns_plugin_enabled.
type blockKey struct{ server, zone, view string }

func (b blockKey) String() string {
	s := b.zone + " on " + b.server
	if b.view != "" {
		s += " view " + b.view
	}
	return s
}

func corednsActivation(f *Facts) Check {
	pods := scraped(f.CoreDNS)
	if len(pods) == 0 {
		return newCheck(idCoreDNSActivation, Warn, "whether hairpin is active was not checked: no CoreDNS pod's metrics could be read").
			hint("see coredns-metrics")
	}
	var missing, active, objects []string
	for _, p := range pods {
		objects = append(objects, podObject(p.Pod))
		kube, hp := map[blockKey]bool{}, map[blockKey]bool{}
		p.Metrics.Each(metricPluginEnabled, func(s Sample) {
			k := blockKey{s.Labels["server"], s.Labels["zone"], s.Labels["view"]}
			switch s.Labels["name"] {
			case kubernetesPluginName:
				kube[k] = true
			case hairpinPluginName:
				hp[k] = true
			}
		})
		if len(kube) == 0 && len(hp) == 0 {
			// A Corefile whose prometheus plugin sits in a block
			// without kubernetes: the plugin's own series still show
			// whether it runs.
			if p.Metrics.HasPrefix(metricHairpinPrefix) {
				active = append(active, p.Pod.Name)
			} else {
				missing = append(missing, p.Pod.Name+": no server block")
			}
			continue
		}
		for k := range kube {
			if !hp[k] {
				missing = append(missing, p.Pod.Name+": "+k.String())
			}
		}
		for k := range hp {
			active = append(active, k.String())
		}
	}
	slices.Sort(missing)
	slices.Sort(active)
	active = slices.Compact(active)
	if len(missing) > 0 {
		return newCheck(idCoreDNSActivation, Fail, "hairpin is not active in every server block with kubernetes (from each pod's metrics): missing in %s", listed(missing)).on(objects...).
			hint("our image adds hairpin to every block that holds kubernetes unless the Corefile names hairpin elsewhere or activation is off (-hairpin.activate=false, COREDNS_HAIRPIN_ACTIVATE=false), or the block comes from an import; add a `hairpin` line to it. CoreDNS logs why: kubectl -n %s logs %s | grep plugin/hairpin", f.Options.CoreDNSNamespace, pods[0].Pod.Name)
	}
	return newCheck(idCoreDNSActivation, OK, "hairpin is active in every server block with kubernetes (from each pod's metrics: %s)", listed(active)).on(objects...)
}

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
				gatewayKinds = gatewayKinds || !slices.Contains([]string{"ingress", "ingressclass", "service"}, kind)
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
		serving, noAddr, disabled := int(st["serving"]), int(st["no_addresses"]), int(st["disabled"])
		switch {
		case disabled > 0:
			return newCheck(idCoreDNSTargets, Fail, "CoreDNS pod %s has %s", p.Pod.Name, plural(disabled, "disabled target", "disabled targets")).on(objects...).
				hint("see the target-annotations and target-zones lines; CoreDNS logs `target NS/NAME is disabled: ...` naming the annotation")
		case noAddr > 0:
			return newCheck(idCoreDNSTargets, Fail, "CoreDNS pod %s has %s without a ClusterIP: their hosts pass through", p.Pod.Name, plural(noAddr, "target", "targets")).on(objects...).
				hint("see the target-address lines")
		case f.TargetsRead && serving+noAddr+disabled == 0 && len(f.Targets) > 0:
			return newCheck(idCoreDNSTargets, Fail, "CoreDNS pod %s sees no targets, but %s holds %d", p.Pod.Name, f.Options.TargetsNamespace, len(f.Targets)).on(objects...).
				hint("a bare hairpin line discovers targets in %s; a Corefile `targets NAMESPACE` must name the namespace the chart installed into (and --namespace here too)", DefaultTargetsNamespace)
		case f.TargetsRead && serving != enabled:
			return newCheck(idCoreDNSTargets, Warn, "CoreDNS pod %s serves %d targets, %s has %d enabled", p.Pod.Name, serving, f.Options.TargetsNamespace, enabled).on(objects...).
				hint("a target was just added or removed (re-run), or CoreDNS discovers targets in another namespace (`targets NAMESPACE` in its Corefile)")
		}
	}
	return newCheck(idCoreDNSTargets, OK, "CoreDNS serves %s (from each pod's metrics)", plural(enabled, "target", "targets")).on(objects...)
}
