package kubectlhairpin

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
)

// hostsShadowed reports the hairpin hosts that a rewrite rule renames
// before hairpin sees them: CoreDNS runs rewrite before hairpin
// (plugin.cfg), so hairpin is asked for the rewritten name, never for
// the host, and the rule's answer wins. ouroboros and compumike's
// hairpin-proxy leave such rules behind.
func hostsShadowed(f *Facts) []Check {
	cf := f.Corefile
	if cf == nil {
		return nil // coredns-pods says why no pod was read
	}
	var out []Check
	if cf.Err != nil {
		ns := f.Options.CoreDNSNamespace
		out = append(out, newCheck(idHostsShadowed, Warn, "cannot tell whether a rewrite rule shadows hairpin hosts: %v", cf.Err).on(cf.Pod).
			hint("grant get on configmaps in %s (see cluster-access), or look by hand: kubectl -n %s get configmaps -o yaml | grep -n rewrite", ns, ns))
	}
	hosts := answeredHosts(f)
	count := 0
	for bi, b := range cf.Blocks {
		for _, r := range b.Rewrites {
			count++
			if r.Err != nil && servesAny(cf.Blocks, bi, slices.Collect(maps.Keys(hosts))) {
				out = append(out, newCheck(idHostsShadowed, Warn, "cannot tell whether %s rewrites a hairpin host: %v", r.describe(), r.Err).on(r.object()).
					hint("CoreDNS refuses a rule it cannot read, and keeps its last configuration: fix or remove %s", r.location()))
			}
		}
	}
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		var covering []RewriteRule
		for bi, b := range cf.Blocks {
			if !servesAny(cf.Blocks, bi, []string{h}) {
				continue
			}
			for _, r := range b.Rewrites {
				// An exact host wins over a wildcard: a rule for one name
				// hairpin answers as a host of its own is that host's finding.
				_, own := hosts[r.name.from]
				if strings.HasPrefix(h, "*.") && r.name.match == matchExact && own {
					continue
				}
				if r.Err == nil && r.name.covers(h) {
					covering = append(covering, r)
				}
			}
		}
		if len(covering) > 0 {
			out = append(out, shadowed(f, h, hosts[h], covering))
		}
	}
	loaded, told, pods := replicasRewriting(f)
	if len(loaded) > 0 {
		var objects []string
		for _, p := range pods {
			objects = append(objects, podObject(p.Pod))
		}
		out = append(out, newCheck(idHostsShadowed, Warn, "%d of %d CoreDNS replicas still run a rewrite that renames hairpin hosts, as they loaded it: %s", len(loaded), len(pods), listed(loaded)).on(objects...).
			hint("each answers those hosts with the rule's target until its reload loads a Corefile without the rule (the kubelet updates the mounted file within about a minute, and the reload plugin loads it within 30 to 45 s); check again before removing whatever the rule pointed at"))
	}
	if len(out) == 0 {
		where := "ConfigMap " + cf.ConfigMap + ", key " + cf.Key
		msg := fmt.Sprintf("no rewrite rule covers a hairpin host (%s read in %s and the files it imports)", plural(count, "name rewrite rule", "name rewrite rules"), where)
		if told > 0 {
			msg += fmt.Sprintf(", and no CoreDNS replica's loaded rewrite renames one (%d/%d replicas say so)", told, len(f.CoreDNS))
		}
		return []Check{newCheck(idHostsShadowed, OK, "%s", msg).on("configmap/" + cf.ConfigMap)}
	}
	return out
}

// replicasRewriting reads, from each CoreDNS replica whose metrics were
// read, how many hairpin hosts the rewrite it has loaded renames
// (rules.MetricHostsRewritten): the ConfigMap says what the next reload
// loads, the replica what it answers with now. loaded lists the replicas
// that still rename some ("POD (N hosts)"), told counts those that said.
// A replica without the series runs an image older than the metric.
func replicasRewriting(f *Facts) (loaded []string, told int, pods []PodFacts) {
	pods = scraped(f.CoreDNS)
	for _, p := range pods {
		n, ok := p.Metrics.Sum(rules.MetricHostsRewritten)
		if !ok {
			continue
		}
		told++
		if n > 0 {
			loaded = append(loaded, fmt.Sprintf("%s (%s)", p.Pod.Name, plural(int(n), "host", "hosts")))
		}
	}
	return loaded, told, pods
}

// shadowed is the finding for one host and the rules that rename it.
func shadowed(f *Facts, host string, objs []HostObject, covering []RewriteRule) Check {
	var by, fixes, stops []string
	var objects []string
	for _, o := range objs {
		objects = append(objects, o.Object)
	}
	for _, r := range covering {
		by = append(by, r.describe())
		objects = append(objects, r.object())
		if fix := r.fix(); !slices.Contains(fixes, fix) {
			fixes = append(fixes, fix)
		}
		if stop := stopFirst(r.Author); stop != "" && !slices.Contains(stops, stop) {
			stops = append(stops, stop)
		}
	}
	fix := strings.Join(append(stops, fixes...), "; then ")
	return newCheck(idHostsShadowed, Warn, "host %s is rewritten before hairpin sees it, so hairpin never answers it: %s", hostName(host), strings.Join(by, "; ")).on(objects...).
		hint("CoreDNS runs rewrite before hairpin: %s; then wait for the reload of every CoreDNS replica (the kubelet updates the mounted file within about a minute, and the reload plugin loads it within 30 to 45 s) before removing whatever the rule pointed at", fix)
}

// stopFirst is what keeps an author's controller from writing its rule
// back once removed, "" for a rule no controller keeps.
func stopFirst(author string) string {
	switch author {
	case authorOuroboros:
		// It re-applies its rules at every resync, 30 s.
		return "stop ouroboros's controller first, or it writes its rules back within 30 s (its chart's controller.enabled=false, or scale its controller's Deployment to 0)"
	case authorHairpinProxy:
		// main.rb POLL_INTERVAL: 15 s by default; deploy.yml names the
		// Deployment.
		return "stop hairpin-proxy's controller first, or it writes its rules back within 15 s (kubectl -n hairpin-proxy scale deploy/hairpin-proxy-controller --replicas=0)"
	}
	return ""
}

// describe names the rule, its author and where it is written.
func (r RewriteRule) describe() string {
	who := "a rewrite"
	switch r.Author {
	case authorOuroboros:
		who = "ouroboros's rewrite"
	case authorHairpinProxy:
		who = "compumike's hairpin-proxy's rewrite"
	}
	return fmt.Sprintf("%s `%s` (%s)", who, r.Text, r.location())
}

func (r RewriteRule) location() string {
	return fmt.Sprintf("ConfigMap %s, key %s, line %d", r.ConfigMap, r.Key, r.Line)
}

func (r RewriteRule) object() string { return "configmap/" + r.ConfigMap }

// fix says which lines to take out, and how.
func (r RewriteRule) fix() string {
	ns, name, _ := strings.Cut(r.ConfigMap, "/")
	switch {
	case r.Key == ouroborosOverrideKey:
		return fmt.Sprintf(`remove the key %s from ConfigMap %s: kubectl -n %s patch configmap %s --type json -p '[{"op":"remove","path":"/data/%s"}]'`, r.Key, r.ConfigMap, ns, name, r.Key)
	case r.Author == authorOuroboros:
		return fmt.Sprintf("remove ouroboros's block, from `%s` to `%s`, from key %s of ConfigMap %s: kubectl -n %s edit configmap %s", ouroborosBegin, ouroborosEnd, r.Key, r.ConfigMap, ns, name)
	}
	return fmt.Sprintf("remove line %d (`%s`) from key %s of ConfigMap %s: kubectl -n %s edit configmap %s", r.Line, r.Text, r.Key, r.ConfigMap, ns, name)
}

// servesAny reports whether CoreDNS asks block bi for one of hosts: one of
// its zones holds the host, and no block on the same port holds it in a
// longer zone (CoreDNS gives a query to the most specific zone).
func servesAny(blocks []ServerBlock, bi int, hosts []string) bool {
	for _, h := range hosts {
		for _, k := range blocks[bi].Keys {
			if !rules.InZones([]string{k.Zone}, h) {
				continue
			}
			if !slices.ContainsFunc(blocks, func(o ServerBlock) bool {
				return slices.ContainsFunc(o.Keys, func(ok ServerKey) bool {
					return ok.Port == k.Port && len(ok.Zone) > len(k.Zone) && rules.InZones([]string{ok.Zone}, h)
				})
			}) {
				return true
			}
		}
	}
	return false
}
