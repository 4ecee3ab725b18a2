package hairpin

import (
	"maps"
	"slices"
	"strings"
)

// index is an immutable snapshot of the served hosts. The query path reads it
// through an atomic pointer and never takes a lock; writers build a new one and
// swap it in.
type index struct {
	exact    map[string]*proxyTarget // "app.example.com." -> target
	wildcard map[string]*proxyTarget // "example.com." for "*.example.com." -> target
}

var emptyIndex = &index{exact: map[string]*proxyTarget{}, wildcard: map[string]*proxyTarget{}}

// lookup returns the target for the lowercased, fully qualified qname, or nil.
// An exact host wins over a wildcard, and a wildcard matches exactly one
// label, as in Ingress semantics. The cost is two map reads whatever the size.
func (ix *index) lookup(qname string) *proxyTarget {
	if t, ok := ix.exact[qname]; ok {
		return t
	}
	dot := strings.IndexByte(qname, '.')
	if dot <= 0 || dot == len(qname)-1 {
		return nil
	}
	return ix.wildcard[qname[dot+1:]]
}

// size returns the number of exact and wildcard hosts.
func (ix *index) size() (exact, wildcard int) { return len(ix.exact), len(ix.wildcard) }

// hostKey is where a normalized host lives in the index: the wildcard map is
// keyed by the parent of "*.".
func hostKey(host string) (key string, wildcard bool) {
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		return rest, true
	}
	return host, false
}

// claims is the mutable host table behind the index: which objects claim
// which host, so that a host named by several objects stays until the last
// one goes. It is not safe for concurrent use; the builder serialises access.
type claims struct {
	byOwner map[string]ownerClaims // owner key -> what it claims
	byHost  map[string][]hostOwner // host -> the owners that name it

	rejected map[rejectedHost]int // rejected host -> number of owners naming it

	live  *index              // the index as of the last publish, cloned on write
	dirty map[string]struct{} // hosts whose winner must be recomputed
}

// ownerClaims is what one object (an Ingress, a Gateway, a route) contributes.
type ownerClaims struct {
	hosts    []string
	target   *proxyTarget
	rejected []rejectedHost
}

func (oc ownerClaims) equal(other ownerClaims) bool {
	return oc.target == other.target && slices.Equal(oc.hosts, other.hosts) && slices.Equal(oc.rejected, other.rejected)
}

// rejectedHost is a host that an object names but that is never served.
type rejectedHost struct {
	host   string
	reason string
}

func newClaims() *claims {
	return &claims{
		byOwner:  map[string]ownerClaims{},
		byHost:   map[string][]hostOwner{},
		rejected: map[rejectedHost]int{},
		live:     emptyIndex,
		dirty:    map[string]struct{}{},
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
	if had {
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
	if len(oc.hosts) == 0 && len(oc.rejected) == 0 {
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

// owners returns the keys of every owner that currently claims something.
func (c *claims) owners() []string {
	keys := make([]string, 0, len(c.byOwner))
	for k := range c.byOwner {
		keys = append(keys, k)
	}
	return keys
}

// publish returns a new immutable index that reflects every set since the last
// publish. Only dirty hosts are recomputed; the maps are cloned once, so the
// cost is a map copy, not a rebuild from the objects. changed is false when
// nothing was dirty and the previous index is returned.
func (c *claims) publish() (ix *index, changed bool) {
	if len(c.dirty) == 0 {
		return c.live, false
	}
	next := &index{exact: maps.Clone(c.live.exact), wildcard: maps.Clone(c.live.wildcard)}
	for h := range c.dirty {
		key, wild := hostKey(h)
		m := next.exact
		if wild {
			m = next.wildcard
		}
		if t := winner(c.byHost[h]); t != nil {
			m[key] = t
		} else {
			delete(m, key)
		}
	}
	clear(c.dirty)
	c.live = next
	return next, true
}

// hostOwner is one object naming a host. Nearly every host has exactly one,
// so a slice costs one small allocation where a map per host cost several.
type hostOwner struct {
	owner  string
	target *proxyTarget
}

// winner picks the target of the lexically first owner so that the answer does
// not depend on event order when owners disagree.
func winner(owners []hostOwner) *proxyTarget {
	var best *hostOwner
	for i := range owners {
		if best == nil || owners[i].owner < best.owner {
			best = &owners[i]
		}
	}
	if best == nil {
		return nil
	}
	return best.target
}

// rejectedByReason counts the distinct hosts that are named but not served.
func (c *claims) rejectedByReason() map[string]int {
	counts := map[string]int{}
	for r := range c.rejected {
		counts[r.reason]++
	}
	return counts
}
