package hairpin

import "hash/maphash"

// hostTable is one shard of the index: a flat open-addressing table from a
// host to the target that answers it, with linear probing. A lookup reads a
// run of one-byte tags and, on a matching tag, one slot and its key, so a hit
// on a table far larger than the CPU caches costs about two cache misses; a
// Go map costs its header, directory, group and slot besides. Readers share
// a table that no writer changes any more (claims clones it first).
type hostTable struct {
	tags  []uint8 // per slot: 0 when empty, else tagOf(hash)
	slots []hostSlot
	n     int // occupied slots
}

// hostSlot is one served host. owner is the winning owner, which the write
// side needs and queries never read.
type hostSlot struct {
	key    string
	target *target
	owner  *owner
}

// seed is the process's hash seed: an answer never depends on it, and a
// tenant cannot aim names at one probe run without it.
var seed = maphash.MakeSeed()

func hashOf(key string) uint64 { return maphash.String(seed, key) }

// tagOf takes bits of the hash that neither the shard nor the home slot
// uses; the top bit keeps it from 0, the empty tag.
func tagOf(h uint64) uint8 { return uint8(h>>48) | 0x80 }

// home is the first slot probed for h: the low 32 bits scaled to the table
// size (Lemire's fastrange), so any size works, not only powers of two.
func (t *hostTable) home(h uint64) int { return int((h & 0xffffffff) * uint64(len(t.tags)) >> 32) }

// find returns the slot of key, or -1.
func (t *hostTable) find(key string, h uint64) int {
	if len(t.tags) == 0 {
		return -1
	}
	tag := tagOf(h)
	for i := t.home(h); ; {
		switch t.tags[i] {
		case 0:
			return -1
		case tag:
			if t.slots[i].key == key {
				return i
			}
		}
		if i++; i == len(t.tags) {
			i = 0
		}
	}
}

// Load bounds: a table grows when it would be more than 4/5 full and is then
// made 2/3 full, so that a miss scans a short run of tags.
func overfull(n, size int) bool { return 5*n > 4*size }
func sizeFor(n int) int         { return max(8, 3*n/2) }

// put sets the slot of s.key, adding it if absent, and reports whether it
// was added. The caller owns t.
func (t *hostTable) put(s hostSlot, h uint64) (added bool) {
	if i := t.find(s.key, h); i >= 0 {
		t.slots[i] = s
		return false
	}
	if overfull(t.n+1, len(t.tags)) {
		t.resize(sizeFor(t.n + 1))
	}
	t.insert(s, h)
	t.n++
	return true
}

// insert places s in the first empty slot from its home.
func (t *hostTable) insert(s hostSlot, h uint64) {
	i := t.home(h)
	for t.tags[i] != 0 {
		if i++; i == len(t.tags) {
			i = 0
		}
	}
	t.tags[i], t.slots[i] = tagOf(h), s
}

// remove deletes key and returns its slot. The run after it is shifted back
// (no tombstones), so lookups never scan deleted entries. The caller owns t.
func (t *hostTable) remove(key string, h uint64) (hostSlot, bool) {
	i := t.find(key, h)
	if i < 0 {
		return hostSlot{}, false
	}
	old := t.slots[i]
	size := len(t.tags)
	for j := i; ; {
		if j++; j == size {
			j = 0
		}
		if t.tags[j] == 0 {
			break
		}
		// The entry at j may move to the hole at i unless its home lies
		// cyclically in (i, j]: then it would be placed before its home.
		k := t.home(hashOf(t.slots[j].key))
		if (i <= j && (k <= i || k > j)) || (i > j && k <= i && k > j) {
			t.tags[i], t.slots[i] = t.tags[j], t.slots[j]
			i = j
		}
	}
	t.tags[i], t.slots[i] = 0, hostSlot{}
	t.n--
	if len(t.tags) > 8 && 4*t.n < len(t.tags) {
		t.resize(sizeFor(t.n)) // most of it went: give the memory back
	}
	return old, true
}

// resize rehashes into size slots.
func (t *hostTable) resize(size int) {
	old := *t
	t.tags, t.slots = make([]uint8, size), make([]hostSlot, size)
	for i, tag := range old.tags {
		if tag != 0 {
			t.insert(old.slots[i], hashOf(old.slots[i].key))
		}
	}
}

// clone is a copy that a writer may change.
func (t *hostTable) clone() hostTable {
	return hostTable{tags: append([]uint8(nil), t.tags...), slots: append([]hostSlot(nil), t.slots...), n: t.n}
}
