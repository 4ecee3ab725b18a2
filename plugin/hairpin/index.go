package hairpin

import "strings"

// index is an immutable snapshot of the served hosts. The query path reads it
// through an atomic pointer and never takes a lock; the write side (claims)
// builds the next one and swaps it in. Each entry points at the target it
// answers with.
//
// The hosts are split into shards by their hash, so that a publish copies
// only the shards its changes touch: with 200,000 hosts one change costs a
// copy of about 800 slots instead of the whole index.
type index struct {
	exact    shards    // "app.example.com." -> target
	wildcard shards    // "example.com." for "*.example.com." -> target
	targets  []*target // by the numbers in the slots
}

// shardCount is a power of two: the top bits of a hash pick the shard.
const (
	shardBits  = 8
	shardCount = 1 << shardBits
)

type shards struct {
	t [shardCount]hostTable
	n int // hosts in all shards
}

var emptyIndex = &index{}

func shardOf(h uint64) int { return int(h >> (64 - shardBits)) }

func (ix *index) get(s *shards, key string) *target {
	h := hashOf(key)
	t := &s.t[shardOf(h)]
	if i := t.find(key, h); i >= 0 {
		return ix.targets[t.slots[i].target]
	}
	return nil
}

// lookup returns the target for the lowercased, fully qualified qname, or nil.
// An exact host wins over a wildcard, and a wildcard matches exactly one
// label, as in Ingress semantics. The cost is one or two table reads
// whatever the size.
func (ix *index) lookup(qname string) *target {
	if t := ix.get(&ix.exact, qname); t != nil {
		return t
	}
	if ix.wildcard.n == 0 {
		return nil
	}
	dot := strings.IndexByte(qname, '.')
	if dot <= 0 || dot == len(qname)-1 {
		return nil
	}
	return ix.get(&ix.wildcard, qname[dot+1:])
}

// size returns the number of exact and wildcard hosts.
func (ix *index) size() (exact, wildcard int) { return ix.exact.n, ix.wildcard.n }

// each calls f for every host in the index, wildcards as "*.parent".
func (ix *index) each(f func(host string, t *target)) {
	for prefix, s := range map[string]*shards{"": &ix.exact, "*.": &ix.wildcard} {
		for i := range s.t {
			t := &s.t[i]
			for j := range t.slots {
				if slot := &t.slots[j]; slot.klen != 0 {
					f(prefix+t.keyOf(slot), ix.targets[slot.target])
				}
			}
		}
	}
}

// hostKey is where a normalized host lives in the index: the wildcard shards
// are keyed by the parent of "*.".
func hostKey(host string) (key string, wildcard bool) {
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		return rest, true
	}
	return host, false
}
