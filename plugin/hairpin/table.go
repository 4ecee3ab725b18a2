package hairpin

import (
	"encoding/binary"
	"hash/maphash"
)

// hostTable is one shard of the index: a flat open-addressing table from a
// host to the number of the target that answers it, with linear probing.
// Each slot is one 64-byte cache line that holds the key itself, so a hit on
// a table far larger than the CPU caches reads one line; a Go map reads its
// header, a group, a slot, and the key's bytes elsewhere. The slots hold no
// pointers, so the garbage collector does not scan them either. Readers
// share a table that no writer changes any more (claims clones it first).
type hostTable struct {
	slots []hostSlot
	long  []string // keys longer than a slot holds, by the number in their slot
	n     int      // occupied slots
}

// hostSlot is one served host: its hash, its key (or the number of a long
// key), the number of its target in the index, and the number of its
// winning owner, which the write side needs and queries never read.
type hostSlot struct {
	hash   uint32 // the low 32 bits of the key's hash: the home slot, and a filter
	klen   uint8  // 0: empty; longKey: the key is long[key[0:4]]
	_      uint8
	target uint16
	owner  uint32
	key    [inlineKey]byte
}

const (
	inlineKey = 52 // bytes of a key held in its slot, for 64-byte slots
	longKey   = 0xff
)

// seed is the process's hash seed: an answer never depends on it, and a
// tenant cannot aim names at one probe run without it.
var seed = maphash.MakeSeed()

func hashOf(key string) uint64 { return maphash.String(seed, key) }

// home is the first slot probed for h: the low 32 bits scaled to the table
// size (Lemire's fastrange), so any size works, not only powers of two.
func (t *hostTable) home(h uint32) int { return int(uint64(h) * uint64(len(t.slots)) >> 32) }

// find returns the slot of key, or -1.
func (t *hostTable) find(key string, h uint64) int {
	if len(t.slots) == 0 {
		return -1
	}
	h32 := uint32(h)
	for i := t.home(h32); ; {
		s := &t.slots[i]
		if s.klen == 0 {
			return -1
		}
		if s.hash == h32 && t.holds(s, key) {
			return i
		}
		if i++; i == len(t.slots) {
			i = 0
		}
	}
}

// holds reports whether the occupied slot s is key's.
func (t *hostTable) holds(s *hostSlot, key string) bool {
	if s.klen == longKey {
		return t.long[binary.LittleEndian.Uint32(s.key[:4])] == key
	}
	return int(s.klen) == len(key) && string(s.key[:s.klen]) == key
}

// keyOf returns the key of an occupied slot.
func (t *hostTable) keyOf(s *hostSlot) string {
	if s.klen == longKey {
		return t.long[binary.LittleEndian.Uint32(s.key[:4])]
	}
	return string(s.key[:s.klen])
}

// Load bounds: a table grows when it would be more than 4/5 full and is then
// made 2/3 full, so that a miss reads a short run of slots.
func overfull(n, size int) bool { return 5*n > 4*size }
func sizeFor(n int) int         { return max(8, 3*n/2) }

// set points the slot of key at target and owner, adding it if absent, and
// reports whether it was added. The caller owns t.
func (t *hostTable) set(key string, h uint64, target uint16, owner uint32) (added bool) {
	if i := t.find(key, h); i >= 0 {
		t.slots[i].target, t.slots[i].owner = target, owner
		return false
	}
	if overfull(t.n+1, len(t.slots)) {
		t.resize(sizeFor(t.n + 1))
	}
	s := hostSlot{hash: uint32(h), target: target, owner: owner}
	if len(key) <= inlineKey {
		s.klen = uint8(len(key))
		copy(s.key[:], key)
	} else {
		s.klen = longKey
		binary.LittleEndian.PutUint32(s.key[:4], uint32(len(t.long)))
		t.long = append(t.long, key)
	}
	t.place(s)
	t.n++
	return true
}

// place puts s in the first empty slot from its home.
func (t *hostTable) place(s hostSlot) {
	i := t.home(s.hash)
	for t.slots[i].klen != 0 {
		if i++; i == len(t.slots) {
			i = 0
		}
	}
	t.slots[i] = s
}

// remove deletes key. The run after it is shifted back (no tombstones), so
// lookups never scan deleted entries. The caller owns t.
func (t *hostTable) remove(key string, h uint64) bool {
	i := t.find(key, h)
	if i < 0 {
		return false
	}
	old := t.slots[i]
	if old.klen == longKey {
		t.long[binary.LittleEndian.Uint32(old.key[:4])] = "" // its number is not reused until a resize
	}
	size := len(t.slots)
	for j := i; ; {
		if j++; j == size {
			j = 0
		}
		if t.slots[j].klen == 0 {
			break
		}
		// The entry at j may move to the hole at i unless its home lies
		// cyclically in (i, j]: then it would be placed before its home.
		k := t.home(t.slots[j].hash)
		if (i <= j && (k <= i || k > j)) || (i > j && k <= i && k > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = hostSlot{}
	t.n--
	if len(t.slots) > 8 && 4*t.n < len(t.slots) {
		t.resize(sizeFor(t.n)) // most of it went: give the memory back
	}
	return true
}

// resize rehashes into size slots, and drops the long keys that went.
func (t *hostTable) resize(size int) {
	old := *t
	t.slots, t.long = make([]hostSlot, size), nil
	for i := range old.slots {
		s := old.slots[i]
		if s.klen == longKey {
			binary.LittleEndian.PutUint32(s.key[:4], uint32(len(t.long)))
			t.long = append(t.long, old.keyOf(&old.slots[i]))
		}
		if s.klen != 0 {
			t.place(s)
		}
	}
}

// clone is a copy that a writer may change.
func (t *hostTable) clone() hostTable {
	return hostTable{slots: append([]hostSlot(nil), t.slots...), long: append([]string(nil), t.long...), n: t.n}
}
