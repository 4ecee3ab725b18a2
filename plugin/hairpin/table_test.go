package hairpin

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestHostTableAgreesWithAMap: puts and removes in a random order, on keys
// that share few shards' worth of slots, leave the table holding exactly
// what a map holds, found from any home slot (removal shifts runs back).
func TestHostTableAgreesWithAMap(t *testing.T) {
	for _, n := range []int{1, 7, 100, 3000} {
		t.Run(fmt.Sprintf("keys=%d", n), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(n), 1))
			var tbl hostTable
			want := map[string]uint16{}
			for op := 0; op < 20*n; op++ {
				key := fmt.Sprintf("h%d.example.com.", r.IntN(2*n))
				if r.IntN(3) == 0 {
					_, had := want[key]
					if ok := tbl.remove(key, hashOf(key)); ok != had {
						t.Fatalf("op %d: remove(%s) = %v, want %v", op, key, ok, had)
					}
					delete(want, key)
					continue
				}
				tg := uint16(r.IntN(2))
				if r.IntN(4) == 0 {
					key += strings.Repeat("long.", 12) // beyond what a slot holds
				}
				_, had := want[key]
				if added := tbl.set(key, hashOf(key), tg, 7); added == had {
					t.Fatalf("op %d: put(%s) added = %v, want %v", op, key, added, !had)
				}
				want[key] = tg
			}
			if tbl.n != len(want) {
				t.Fatalf("table holds %d, map %d", tbl.n, len(want))
			}
			for i := 0; i < 2*n; i++ {
				for _, key := range []string{fmt.Sprintf("h%d.example.com.", i), fmt.Sprintf("h%d.example.com.", i) + strings.Repeat("long.", 12)} {
					j := tbl.find(key, hashOf(key))
					tg, ok := want[key]
					if (j >= 0) != ok || (ok && (tbl.slots[j].target != tg || tbl.keyOf(&tbl.slots[j]) != key)) {
						t.Fatalf("%s: found %v, want %v (%v)", key, j >= 0, ok, tg)
					}
				}
			}
			if len(want) > 0 && overfull(tbl.n, len(tbl.slots)) {
				t.Errorf("%d of %d slots used: over the load bound", tbl.n, len(tbl.slots))
			}
		})
	}
}

func TestHostTableCloneIsIndependent(t *testing.T) {
	var a hostTable
	for i := range 50 {
		key := fmt.Sprintf("h%d.", i)
		a.set(key, hashOf(key), 1, 1)
	}
	b := a.clone()
	for i := range 50 {
		key := fmt.Sprintf("h%d.", i)
		b.remove(key, hashOf(key))
	}
	for i := range 50 {
		if key := fmt.Sprintf("h%d.", i); a.find(key, hashOf(key)) < 0 {
			t.Fatalf("%s left the original when its clone lost it", key)
		}
	}
	if b.n != 0 || a.n != 50 {
		t.Fatalf("clone holds %d, original %d; want 0 and 50", b.n, a.n)
	}
}
