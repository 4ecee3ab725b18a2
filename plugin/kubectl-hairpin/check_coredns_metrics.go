package kubectlhairpin

import (
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

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
	if len(missing) > 0 && hairpinUnneeded(f) {
		return newCheck(idCoreDNSActivation, OK, "hairpin is not active in every server block with kubernetes (missing in %s), and needs not be: %s", listed(missing), unneededReason).on(objects...)
	}
	if len(missing) > 0 {
		return newCheck(idCoreDNSActivation, Fail, "hairpin is not active in every server block with kubernetes (from each pod's metrics): missing in %s", listed(missing)).on(objects...).
			hint("our image adds hairpin to every block that holds kubernetes unless the Corefile names hairpin elsewhere or activation is off (-hairpin.activate=false, COREDNS_HAIRPIN_ACTIVATE=false), or the block comes from an import; add a `hairpin` line to it. CoreDNS logs why: kubectl -n %s logs %s | grep plugin/hairpin", f.Options.CoreDNSNamespace, pods[0].Pod.Name)
	}
	return newCheck(idCoreDNSActivation, OK, "hairpin is active in every server block with kubernetes (from each pod's metrics: %s)", listed(active)).on(objects...)
}
