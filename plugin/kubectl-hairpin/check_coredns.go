package kubectlhairpin

import (
	"fmt"
	"slices"
	"strings"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	core "k8s.io/api/core/v1"
)

// The CoreDNS metrics read here: the plugin's, named in package rules, and
// CoreDNS's own coredns_plugin_enabled, set per server block by the
// prometheus plugin.
const (
	metricPluginEnabled  = "coredns_plugin_enabled"
	metricHairpinPrefix  = rules.MetricPrefix
	metricKindSynced     = rules.MetricKindSynced
	metricWatchErrors    = rules.MetricWatchErrors
	metricTargets        = rules.MetricTargets
	metricHostsRejected  = rules.MetricHostsRejected
	metricUnselected     = rules.MetricUnselected
	metricConflicts      = rules.MetricConflicts
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
	if pods.Status == Fail || len(f.CoreDNS) == 0 {
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
	of := ""
	if len(f.CoreDNSDeployments) > 0 {
		of = " (" + listed(f.CoreDNSDeployments) + ")"
	}
	c := newCheck(idCoreDNSPods, OK, "CoreDNS runs behind %s/%s: %d/%d pods ready, image %s%s", ns, kubeDNS, ready, len(f.CoreDNS), listed(images), of).on(svc).on(f.CoreDNSDeployments...).on(objects...)
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
	case len(without) > 0 && hairpinUnneeded(f):
		return newCheck(idCoreDNSImage, OK, "CoreDNS runs no hairpin build (%s), and needs none: %s", listed(without), unneededReason).on(objects...)
	case len(without) > 0:
		return newCheck(idCoreDNSImage, Fail, "CoreDNS does not run a hairpin build: %s shows no hairpin plugin in its metrics", listed(without)).on(objects...).hint("%s", pin)
	case len(unknown) > 0:
		return newCheck(idCoreDNSImage, Warn, "cannot tell whether CoreDNS runs a hairpin build: %s is not our image by name and its metrics could not be read", listed(unknown)).on(objects...).hint("%s; or make the metrics readable (see coredns-metrics)", pin)
	}
	return newCheck(idCoreDNSImage, OK, "CoreDNS runs a hairpin build (%s)", listed(images)).on(objects...)
}
