package hairpin

import "strings"

// index is an immutable snapshot of the served hosts. The query path reads it
// through an atomic pointer and never takes a lock; writers build a new one and
// swap it in. Each entry points at the target it was built for.
//
// The maps are split into shards by a hash of the key, so that a publish
// copies only the shards its changes touch: with 200,000 hosts one change
// costs a copy of about 800 entries instead of the whole index.
type index struct {
	exact    shards // "app.example.com." -> target
	wildcard shards // "example.com." for "*.example.com." -> target
}

// shardCount is a power of two; shardOf masks with it.
const shardCount = 256

type shards struct {
	m [shardCount]map[string]*target
	n int // entries in all shards
}

var emptyIndex = newIndex()

func newIndex() *index {
	ix := &index{}
	for i := range ix.exact.m {
		ix.exact.m[i] = map[string]*target{}
		ix.wildcard.m[i] = map[string]*target{}
	}
	return ix
}

// shardOf is FNV-1a of key, masked to a shard.
func shardOf(key string) int {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return int(h & (shardCount - 1))
}

func (s *shards) get(key string) (*target, bool) {
	t, ok := s.m[shardOf(key)][key]
	return t, ok
}

// lookup returns the target for the lowercased, fully qualified qname, or nil.
// An exact host wins over a wildcard, and a wildcard matches exactly one
// label, as in Ingress semantics. The cost is two map reads whatever the size.
func (ix *index) lookup(qname string) *target {
	if t, ok := ix.exact.get(qname); ok {
		return t
	}
	dot := strings.IndexByte(qname, '.')
	if dot <= 0 || dot == len(qname)-1 {
		return nil
	}
	t, _ := ix.wildcard.get(qname[dot+1:])
	return t
}

// size returns the number of exact and wildcard hosts.
func (ix *index) size() (exact, wildcard int) { return ix.exact.n, ix.wildcard.n }

// each calls f for every host in the index, wildcards as "*.parent".
func (ix *index) each(f func(host string, t *target)) {
	for _, m := range ix.exact.m {
		for h, t := range m {
			f(h, t)
		}
	}
	for _, m := range ix.wildcard.m {
		for h, t := range m {
			f("*."+h, t)
		}
	}
}

// hostKey is where a normalized host lives in the index: the wildcard map is
// keyed by the parent of "*.".
func hostKey(host string) (key string, wildcard bool) {
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		return rest, true
	}
	return host, false
}
