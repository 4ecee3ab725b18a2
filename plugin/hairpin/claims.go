package hairpin

import (
	"slices"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
)

// ownerRef names an owner: its kind and "namespace/name", or for a route
// through one Gateway "namespace/name@gateway-namespace/gateway-name".
type ownerRef struct {
	kind rules.Kind
	key  string
}

func (r ownerRef) String() string { return r.kind.String() + "/" + r.key }

// less orders owners for the winner of a host.
func (r ownerRef) less(o ownerRef) bool {
	return r.kind < o.kind || (r.kind == o.kind && r.key < o.key)
}

// owner is one object that claims hosts: an Ingress, a Gateway's own
// listeners, or a route through one Gateway. It is the identity the write
// side works with; index slots point at the owner that won them. Its claims
// are read and written only under hostCache.mu.
type owner struct {
	ownerRef
	claims ownerClaims
	num    uint32 // its number in the index's slots while it wins any; 0 for none
}

// ownerClaims is what one owner contributes under the current targets.
type ownerClaims struct {
	hosts      []string // served: lowercase FQDNs inside the zones
	target     *target  // the target that answers them; nil when hosts is empty
	rejected   []rules.Rejected
	unselected bool // it names hosts, and no target selects it
	conflict   bool // several targets select it; target is the winner
}

func (oc ownerClaims) equal(other ownerClaims) bool {
	return oc.target == other.target && oc.unselected == other.unselected && oc.conflict == other.conflict &&
		slices.Equal(oc.hosts, other.hosts) && slices.Equal(oc.rejected, other.rejected)
}

func (oc ownerClaims) isEmpty() bool {
	return len(oc.hosts) == 0 && len(oc.rejected) == 0 && !oc.unselected && !oc.conflict
}

// claims is the write side of the index: it keeps the next index up to date
// with every owner's claims as they change, so that a publish is only a
// pointer swap. A host named by one owner (nearly all of them) needs nothing
// but its index slot, which names the owner; only hosts that several owners
// name are listed in shared, so that the host stays until the last of them
// goes. It is not safe for concurrent use; hostCache.mu serialises access.
type claims struct {
	live    *index              // the index as of the last publish
	next    *index              // the index being written; nil until a change after a publish
	own     [2][shardCount]bool // which tables of next are private copies
	copies  int                 // how many tables: what publishing next cost
	changed bool                // next differs from live
	shared  map[string][]*owner // host -> every owner naming it, when there are several
	owners  int                 // owners that claim anything

	// The numbers that slots name owners and targets by (slots hold no
	// pointers). A number is given back when no slot of next names it.
	byNum      []*owner // owner number -> owner; 0 is none
	freeOwners []uint32
	targetNum  map[*target]uint16
	freeTarget []uint16

	rejected   map[rules.Rejected]int // rejected host -> number of owners naming it
	unselected [rules.KindCount]int   // objects that no target selects
	objConfl   [rules.KindCount]int   // objects that several targets select
	hostConfl  map[string]struct{}    // hosts whose owners are on different targets
	perTarget  map[*target]int        // target -> hosts it serves in next
}

func newClaims() *claims {
	return &claims{
		live:      emptyIndex,
		shared:    map[string][]*owner{},
		byNum:     []*owner{nil},
		targetNum: map[*target]uint16{},
		rejected:  map[rules.Rejected]int{},
		hostConfl: map[string]struct{}{},
		perTarget: map[*target]int{},
	}
}

// set replaces what o claims; an empty oc withdraws every claim. It returns
// the rejected hosts that no owner named before, so each is logged once.
func (c *claims) set(o *owner, oc ownerClaims) (newlyRejected []rules.Rejected) {
	old := o.claims
	if old.equal(oc) {
		return nil // a status-only update: nothing to redo
	}
	for _, r := range oc.rejected {
		if c.rejected[r] == 0 {
			newlyRejected = append(newlyRejected, r)
		}
		c.rejected[r]++
	}
	for _, r := range old.rejected {
		if c.rejected[r]--; c.rejected[r] <= 0 {
			delete(c.rejected, r)
		}
	}
	c.count(o.kind, oc, 1)
	c.count(o.kind, old, -1)
	o.claims = oc
	moved := old.target != oc.target
	var keep, had func(string) bool
	if !moved {
		keep, had = membership(oc.hosts), membership(old.hosts)
	}
	for _, h := range old.hosts {
		if moved || !keep(h) {
			c.release(h, o)
		}
	}
	for _, h := range oc.hosts {
		if moved || !had(h) {
			c.claim(h, o)
		}
	}
	if len(oc.hosts) == 0 && o.num != 0 { // it wins no slot any more
		c.byNum[o.num] = nil
		c.freeOwners = append(c.freeOwners, o.num)
		o.num = 0
	}
	return newlyRejected
}

// count adds d to the tallies that oc is part of.
func (c *claims) count(kind rules.Kind, oc ownerClaims, d int) {
	if oc.unselected {
		c.unselected[kind] += d
	}
	if oc.conflict {
		c.objConfl[kind] += d
	}
	if !oc.isEmpty() {
		c.owners += d
	}
}

// membership is a membership test over hosts; a set only for long lists.
func membership(hosts []string) func(string) bool {
	if len(hosts) <= 16 {
		return func(h string) bool { return slices.Contains(hosts, h) }
	}
	set := make(map[string]struct{}, len(hosts))
	for _, h := range hosts {
		set[h] = struct{}{}
	}
	return func(h string) bool { _, ok := set[h]; return ok }
}

// claim adds o to the owners of host h (o's claims already name it).
func (c *claims) claim(h string, o *owner) {
	if owners, ok := c.shared[h]; ok {
		if !slices.Contains(owners, o) {
			owners = append(owners, o)
			c.shared[h] = owners
		}
		c.elect(h, owners)
		return
	}
	switch cur := c.winnerOf(h); cur {
	case nil, o:
		c.write(h, o)
	default:
		owners := []*owner{cur, o}
		c.shared[h] = owners
		c.elect(h, owners)
	}
}

// release removes o from the owners of host h.
func (c *claims) release(h string, o *owner) {
	owners, ok := c.shared[h]
	if !ok {
		c.write(h, nil) // o was its only owner
		return
	}
	owners = slices.DeleteFunc(owners, func(x *owner) bool { return x == o })
	if len(owners) == 1 {
		delete(c.shared, h)
	} else {
		c.shared[h] = owners
	}
	c.elect(h, owners)
}

// elect gives h to the lexically first owner, so that the answer does not
// depend on event order when owners disagree, and records whether they do.
func (c *claims) elect(h string, owners []*owner) {
	best, conflict := owners[0], false
	for _, o := range owners[1:] {
		if o.claims.target != owners[0].claims.target {
			conflict = true
		}
		if o.less(best.ownerRef) {
			best = o
		}
	}
	c.write(h, best)
	if conflict {
		c.hostConfl[h] = struct{}{}
	} else {
		delete(c.hostConfl, h)
	}
}

// winnerOf returns the owner whose slot h has in the index being written.
func (c *claims) winnerOf(h string) *owner {
	ix := c.next
	if ix == nil {
		ix = c.live
	}
	key, wild := hostKey(h)
	s := &ix.exact
	if wild {
		s = &ix.wildcard
	}
	hh := hashOf(key)
	t := s.table(shardOf(hh))
	if t == nil {
		return nil
	}
	if i := t.find(key, hh); i >= 0 {
		return c.byNum[t.slots[i].owner]
	}
	return nil
}

// write sets h's slot in the next index to o and o's target, or removes it
// when o is nil.
func (c *claims) write(h string, o *owner) {
	if c.next == nil {
		next := *c.live // the directories; every one is shared until written
		next.targets = slices.Clone(c.live.targets)
		c.next, c.own, c.copies = &next, [2][shardCount]bool{}, 0
	}
	key, wild := hostKey(h)
	s, live, which := &c.next.exact, &c.live.exact, 0
	if wild {
		s, live, which = &c.next.wildcard, &c.live.wildcard, 1
	}
	hh := hashOf(key)
	i := shardOf(hh)
	j := -1
	if t := s.table(i); t != nil {
		j = t.find(key, hh)
		if o != nil && j >= 0 && c.byNum[t.slots[j].owner] == o && c.next.targets[t.slots[j].target] == o.claims.target {
			return
		}
	}
	if o == nil && j < 0 {
		return
	}
	t := c.writable(s, live, which, i)
	c.changed = true
	if j >= 0 {
		c.untally(c.next.targets[t.slots[j].target])
	}
	if o == nil {
		t.remove(key, hh)
		s.n--
		return
	}
	tn, ok := c.numberTarget(o.claims.target)
	if !ok {
		if j >= 0 {
			t.remove(key, hh)
			s.n--
		}
		return
	}
	if t.set(key, hh, tn, c.numberOwner(o)) {
		s.n++
	}
	c.perTarget[o.claims.target]++
}

// writable returns table i of s in the next index as a private copy,
// copying its directory first while it is still live's.
func (c *claims) writable(s, live *shards, which, i int) *hostTable {
	di := i >> tableBits
	if s.dirs[di] == nil || s.dirs[di] == live.dirs[di] {
		d := new(shardDir)
		if old := s.dirs[di]; old != nil {
			*d = *old
		}
		s.dirs[di] = d
	}
	t := &s.dirs[di][i&(dirSize-1)]
	if !c.own[which][i] {
		*t = t.clone()
		c.own[which][i] = true
		c.copies++
	}
	return t
}

// numberOwner returns o's number, giving it one if it has none.
func (c *claims) numberOwner(o *owner) uint32 {
	if o.num != 0 {
		return o.num
	}
	if n := len(c.freeOwners); n > 0 {
		o.num, c.freeOwners = c.freeOwners[n-1], c.freeOwners[:n-1]
		c.byNum[o.num] = o
	} else {
		o.num = uint32(len(c.byNum))
		c.byNum = append(c.byNum, o)
	}
	return o.num
}

// numberTarget returns t's number in the next index, giving it one if it
// has none. Targets are the Services of one namespace, far fewer than the
// 65,536 numbers; a target beyond them is not served, and says so once.
func (c *claims) numberTarget(t *target) (uint16, bool) {
	if n, ok := c.targetNum[t]; ok {
		return n, true
	}
	var n uint16
	switch last := len(c.freeTarget) - 1; {
	case last >= 0:
		n, c.freeTarget = c.freeTarget[last], c.freeTarget[:last]
		c.next.targets[n] = t
	case len(c.next.targets) <= 0xffff:
		n = uint16(len(c.next.targets))
		c.next.targets = append(c.next.targets, t)
	default:
		tooManyTargetsLog.do(t.Name, func() { log.Errorf("target %s is not served: more than 65,536 targets answer hosts", t.Name) })
		return 0, false
	}
	c.targetNum[t] = n
	return n, true
}

var tooManyTargetsLog = newOnceLog()

// untally counts one slot fewer for t, and gives its number back when no
// slot of next names it any more.
func (c *claims) untally(t *target) {
	if c.perTarget[t]--; c.perTarget[t] > 0 {
		return
	}
	delete(c.perTarget, t)
	if n, ok := c.targetNum[t]; ok {
		delete(c.targetNum, t)
		c.next.targets[n] = nil
		c.freeTarget = append(c.freeTarget, n)
	}
}

// publish returns the index that reflects every set since the last publish;
// changed is false when nothing changed and the previous index is returned.
// copies is how many tables the new index copied. The index returned is
// never written again.
func (c *claims) publish() (ix *index, changed bool, copies int) {
	if !c.changed {
		return c.live, false, 0
	}
	c.live, c.next, c.changed = c.next, nil, false
	return c.live, true, c.copies
}

// rejectedByReason counts the distinct hosts that are named but not served.
func (c *claims) rejectedByReason() map[string]int {
	counts := map[string]int{}
	for r := range c.rejected {
		counts[r.Reason]++
	}
	return counts
}
