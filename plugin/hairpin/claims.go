package hairpin

import (
	"maps"
	"slices"
)

// claims is the mutable host table behind the index: which objects claim
// which host for which target, so that a host named by several objects stays
// until the last one goes. It is not safe for concurrent use; hostCache.mu
// serialises access.
type claims struct {
	byOwner map[string]ownerClaims // owner key -> what it claims
	byHost  map[string][]hostOwner // host -> the owners that name it

	rejected   map[rejectedHost]int // rejected host -> number of owners naming it
	unselected map[string]int       // kind -> objects that no target selects
	objConfl   map[string]int       // kind -> objects that several targets select
	hostConfl  map[string]struct{}  // hosts whose owners are on different targets
	perTarget  map[*target]int      // target -> hosts it serves in live

	live  *index              // the index as of the last publish, cloned on write
	dirty map[string]struct{} // hosts whose winner must be recomputed
}

// ownerClaims is what one object (an Ingress, a Gateway, a route) contributes.
type ownerClaims struct {
	kind       string // "ingress", "gateway", "httproute", ...
	hosts      []string
	target     *target
	rejected   []rejectedHost
	unselected bool // no target selects the object
	conflict   bool // several targets select it; target is the winner
}

func (oc ownerClaims) equal(other ownerClaims) bool {
	return oc.kind == other.kind && oc.target == other.target && oc.unselected == other.unselected &&
		oc.conflict == other.conflict && slices.Equal(oc.hosts, other.hosts) && slices.Equal(oc.rejected, other.rejected)
}

func (oc ownerClaims) isEmpty() bool {
	return len(oc.hosts) == 0 && len(oc.rejected) == 0 && !oc.unselected && !oc.conflict
}

// rejectedHost is a host that an object names but that is never served.
type rejectedHost struct {
	host   string
	reason string
}

func newClaims() *claims {
	return &claims{
		byOwner:    map[string]ownerClaims{},
		byHost:     map[string][]hostOwner{},
		rejected:   map[rejectedHost]int{},
		unselected: map[string]int{},
		objConfl:   map[string]int{},
		hostConfl:  map[string]struct{}{},
		perTarget:  map[*target]int{},
		live:       emptyIndex,
		dirty:      map[string]struct{}{},
	}
}

// set replaces what owner claims. An empty oc removes the owner. It returns
// the rejected hosts that no owner named before, so each is logged once.
func (c *claims) set(owner string, oc ownerClaims) (newlyRejected []rejectedHost) {
	old, had := c.byOwner[owner]
	if had && old.equal(oc) {
		return nil // a status-only update: nothing to redo
	}
	for _, r := range oc.rejected {
		if c.rejected[r] == 0 {
			newlyRejected = append(newlyRejected, r)
		}
		c.rejected[r]++
	}
	c.count(oc, 1)
	if had {
		c.count(old, -1)
		for _, r := range old.rejected {
			if c.rejected[r]--; c.rejected[r] <= 0 {
				delete(c.rejected, r)
			}
		}
		for _, h := range old.hosts {
			owners := slices.DeleteFunc(c.byHost[h], func(o hostOwner) bool { return o.owner == owner })
			if len(owners) == 0 {
				delete(c.byHost, h)
			} else {
				c.byHost[h] = owners
			}
			c.dirty[h] = struct{}{}
		}
	}
	if oc.isEmpty() {
		delete(c.byOwner, owner)
		return newlyRejected
	}
	c.byOwner[owner] = oc
	for _, h := range oc.hosts {
		c.byHost[h] = append(c.byHost[h], hostOwner{owner: owner, target: oc.target})
		c.dirty[h] = struct{}{}
	}
	return newlyRejected
}

// count adds d to the per-kind tallies that oc is part of.
func (c *claims) count(oc ownerClaims, d int) {
	if oc.unselected {
		c.unselected[oc.kind] += d
	}
	if oc.conflict {
		c.objConfl[oc.kind] += d
	}
}

// publish returns a new immutable index that reflects every set since the last
// publish. Only dirty hosts are recomputed; the maps are cloned once, so the
// cost is a map copy, not a rebuild from the objects. changed is false when
// nothing was dirty and the previous index is returned.
func (c *claims) publish() (ix *index, changed bool) {
	if len(c.dirty) == 0 {
		return c.live, false
	}
	next := *c.live // the shard arrays; every shard is shared until written
	var cloned [2][shardCount]bool
	for h := range c.dirty {
		key, wild := hostKey(h)
		s, which := &next.exact, 0
		if wild {
			s, which = &next.wildcard, 1
		}
		i := shardOf(key)
		if !cloned[which][i] {
			s.m[i] = maps.Clone(s.m[i])
			cloned[which][i] = true
		}
		m := s.m[i]
		if old, ok := m[key]; ok {
			c.perTarget[old]--
			if c.perTarget[old] <= 0 {
				delete(c.perTarget, old)
			}
			delete(m, key)
			s.n--
		}
		t, conflict := winner(c.byHost[h])
		if t != nil {
			m[key] = t
			s.n++
			c.perTarget[t]++
		}
		if conflict {
			c.hostConfl[h] = struct{}{}
		} else {
			delete(c.hostConfl, h)
		}
	}
	if len(c.dirty) > 4096 {
		c.dirty = map[string]struct{}{} // the first list's capacity is not kept
	} else {
		clear(c.dirty)
	}
	c.live = &next
	return &next, true
}

// hostOwner is one object naming a host. Nearly every host has exactly one,
// so a slice costs one small allocation where a map per host cost several.
type hostOwner struct {
	owner  string
	target *target
}

// winner picks the target of the lexically first owner, so that the answer
// does not depend on event order when owners disagree. conflict is true when
// the owners name different targets.
func winner(owners []hostOwner) (t *target, conflict bool) {
	var best *hostOwner
	for i := range owners {
		if best != nil && owners[i].target != best.target {
			conflict = true
		}
		if best == nil || owners[i].owner < best.owner {
			best = &owners[i]
		}
	}
	if best == nil {
		return nil, false
	}
	return best.target, conflict
}

// rejectedByReason counts the distinct hosts that are named but not served.
func (c *claims) rejectedByReason() map[string]int {
	counts := map[string]int{}
	for r := range c.rejected {
		counts[r.reason]++
	}
	return counts
}
