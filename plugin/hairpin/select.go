package hairpin

import (
	"slices"

	"github.com/coredns/coredns/plugin"
)

// targets is the table of known targets of one cache, keyed by name. It is
// guarded by hostCache.mu.
type targets map[string]*target

// Match ranks: a more specific selection wins over a broader one, so that a
// tenant's own target beats a catch-all.
const (
	rankNone     = iota
	rankWildcard // "*"
	rankClass    // the object's class by name
	rankName     // the Gateway by namespace/name
)

// selection is the outcome of choosing a target for one object.
type selection struct {
	target   *target // nil when no enabled target selects the object
	conflict bool    // more than one target selected it
}

// pick returns the best-ranked enabled target; ties go to the lexically first
// name, so the winner does not depend on event order.
func (ts targets) pick(rank func(*target) int) selection {
	var best *target
	bestRank, matches := rankNone, 0
	for _, t := range ts {
		if !t.sel.enabled() {
			continue
		}
		r := rank(t)
		if r == rankNone {
			continue
		}
		matches++
		if best == nil || r > bestRank || (r == bestRank && t.name < best.name) {
			best, bestRank = t, r
		}
	}
	return selection{target: best, conflict: matches > 1}
}

// forIngress chooses the target of an Ingress of the given class.
func (ts targets) forIngress(class string) selection {
	return ts.pick(func(t *target) int { return listRank(t.sel.ingressClasses, class) })
}

// forGateway chooses the target of a Gateway, by name first, then by class.
func (ts targets) forGateway(namespace, name, class string) selection {
	key := namespace + "/" + name
	return ts.pick(func(t *target) int {
		if slices.Contains(t.sel.gateways, key) {
			return rankName
		}
		return listRank(t.sel.gatewayClasses, class)
	})
}

// selectsGateways reports whether any target fronts Gateways.
func (ts targets) selectsGateways() bool {
	for _, t := range ts {
		if t.sel.enabled() && t.sel.selectsGateways() {
			return true
		}
	}
	return false
}

func listRank(list []string, name string) int {
	switch {
	case name != "" && slices.Contains(list, name):
		return rankClass
	case slices.Contains(list, "*"):
		return rankWildcard
	}
	return rankNone
}

// inZones reports whether host (a lowercase FQDN, maybe "*.") is inside one
// of zones.
func inZones(zones []string, host string) bool {
	return plugin.Zones(zones).Matches(host) != ""
}
