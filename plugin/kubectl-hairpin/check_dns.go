package kubectlhairpin

import (
	"slices"
	"strings"
)

// checkDNS reports what sits in front of CoreDNS or owns it: node-local-dns,
// which sends names it has no server block for past CoreDNS, and a managed
// DNS whose image is put back.
func checkDNS(f *Facts) []Check {
	return append(nodeLocalDNS(f), managedDNS(f)...)
}

func nodeLocalDNS(f *Facts) []Check {
	if len(f.NodeLocalDNS) == 0 {
		return []Check{newCheck(idNodeLocalDNS, OK, "node-local-dns is not installed (no DaemonSet labelled %s=%s in %s)", nodeLocalDNSLabel, nodeLocalDNSValue, nodeLocalDNSNamespace)}
	}
	var zones []string
	for _, t := range f.Targets {
		if t.Err == nil {
			for _, z := range t.Spec.Zones {
				if !slices.Contains(zones, z) {
					zones = append(zones, z)
				}
			}
		}
	}
	slices.Sort(zones)
	doc := DocsPage("node-local-dns.md")
	var out []Check
	for _, n := range f.NodeLocalDNS {
		if n.CorefileErr != nil {
			out = append(out, newCheck(idNodeLocalDNS, Warn, "node-local-dns runs (%s), and its Corefile could not be read (%v): it may send your zones past CoreDNS", n.Object, n.CorefileErr).on(n.Object).
				hint("give each hairpin zone a server block that forwards to CoreDNS (%s)", doc))
			continue
		}
		var missing []string
		for _, z := range zones {
			if !forwarded(n.Forwarded, z) {
				missing = append(missing, hostName(z))
			}
		}
		if len(missing) > 0 {
			out = append(out, newCheck(idNodeLocalDNS, Warn, "node-local-dns (%s) sends %s past CoreDNS: pods that ask it never get hairpin's answers", n.Object, strings.Join(missing, ", ")).on(n.Object).
				hint("add a server block for them to its Corefile (ConfigMap %s/%s) that forwards to __PILLAR__CLUSTER__DNS__, as %s shows", nodeLocalDNSNamespace, nodeLocalDNSConfigMap, doc))
			continue
		}
		out = append(out, newCheck(idNodeLocalDNS, OK, "node-local-dns (%s) has a server block for every target zone", n.Object).on(n.Object))
	}
	return out
}

// forwarded reports whether one of a Corefile's server-block zones covers
// zone. The root block sends to the node's resolvers, so it does not count.
func forwarded(blocks []string, zone string) bool {
	for _, b := range blocks {
		if b != "." && (zone == b || strings.HasSuffix(zone, "."+b)) {
			return true
		}
	}
	return false
}

func managedDNS(f *Facts) []Check {
	if len(f.ManagedDNS) == 0 {
		return []Check{newCheck(idManagedDNS, OK, "the cluster DNS shows no cloud or addon manager that would put its image back")}
	}
	var out []Check
	for _, m := range f.ManagedDNS {
		page := "install/managed.md"
		if m.Anchor != "" {
			page += "#" + m.Anchor
		}
		out = append(out, newCheck(idManagedDNS, Warn, "the cluster DNS is managed by %s (%s on %s): an image set on it may be put back", m.Provider, m.Evidence, m.Object).on(m.Object).
			hint("see what works on %s: %s", m.Provider, DocsPage(page)))
	}
	return out
}
