package hairpin

import "strings"

// index is an immutable snapshot of the served hosts. The query path reads it
// through an atomic pointer and never takes a lock; the write side (claims)
// builds the next one and swaps it in. Each entry points at the target it
// answers with.
//
// The hosts are split into 1,024 tables by their hash, in two levels, so
// that a publish copies only what its changes touch: with 200,000 hosts a
// change of one host copies the index's directory pointers (256 bytes), one
// directory of 32 table headers (1.8 KiB) and one table of about 250 slots
// (16 KiB). With one level of 256 tables it copied 28 KiB of headers and a
// 75 KiB table, and that garbage was what made the collector run every
// ~15 s under a steady stream of changes, each run stalling the change it
// met by milliseconds. More, smaller tables would copy less still, but
// their headers outgrow the CPU's cache and a lookup then pays for it
// (4,096 tables measured ~15 % slower at 200,000 hosts).
type index struct {
	exact    shards    // "app.example.com." -> target
	wildcard shards    // "example.com." for "*.example.com." -> target
	targets  []*target // by the numbers in the slots
}

// The top shardBits of a hash pick the table: the first dirBits its
// directory, the next tableBits its place there.
const (
	dirBits    = 5
	tableBits  = 5
	shardBits  = dirBits + tableBits
	shardCount = 1 << shardBits // tables
	dirCount   = 1 << dirBits
	dirSize    = 1 << tableBits
)

// shards is one kind of host (exact or wildcard) in its tables. A nil
// directory has only empty tables; directories and tables are shared
// between indexes until a writer changes them (claims copies them first).
type shards struct {
	dirs [dirCount]*shardDir
	n    int // hosts in all tables
}

// shardDir is one directory: the headers of dirSize tables.
type shardDir [dirSize]hostTable

var emptyIndex = &index{}

func shardOf(h uint64) int { return int(h >> (64 - shardBits)) }

// table returns table i, or nil while its directory has none.
func (s *shards) table(i int) *hostTable {
	d := s.dirs[i>>tableBits]
	if d == nil {
		return nil
	}
	return &d[i&(dirSize-1)]
}

func (ix *index) get(s *shards, key string) *target {
	h := hashOf(key)
	t := s.table(shardOf(h))
	if t == nil {
		return nil
	}
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
		for i := range shardCount {
			t := s.table(i)
			if t == nil {
				continue
			}
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
