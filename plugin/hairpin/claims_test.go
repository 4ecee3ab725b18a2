package hairpin

import (
	"fmt"
	"testing"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
)

func ingressOwnerOf(key string) *owner {
	return &owner{ownerRef: ownerRef{kind: rules.KindIngress, key: key}}
}

// TestSharedHostGoesToTheFirstOwnerAndStaysUntilTheLast: a host named by
// several owners is answered with the target of the lexically first, counted
// as a conflict while they disagree, and served until the last one goes.
func TestSharedHostGoesToTheFirstOwnerAndStaysUntilTheLast(t *testing.T) {
	a, b := newTarget(rules.Target{Name: "ns/a"}), newTarget(rules.Target{Name: "ns/b"})
	c := newClaims()
	first, second := ingressOwnerOf("x/first"), ingressOwnerOf("y/second")
	const host = "shared.example.com."
	serving := func(want *target, conflicts int) {
		t.Helper()
		ix, _, _ := c.publish()
		if got := ix.lookup(host); got != want {
			t.Fatalf("%s answered by %v, want %v", host, got, want)
		}
		if len(c.hostConfl) != conflicts {
			t.Fatalf("%d host conflicts, want %d", len(c.hostConfl), conflicts)
		}
	}
	c.set(second, ownerClaims{hosts: []string{host}, target: b})
	serving(b, 0)
	c.set(first, ownerClaims{hosts: []string{host}, target: a})
	serving(a, 1) // the first owner wins, whatever the order of events
	c.set(first, ownerClaims{hosts: []string{host}, target: b})
	serving(b, 0) // both on b now: no conflict
	c.set(first, ownerClaims{})
	serving(b, 0)
	c.set(second, ownerClaims{})
	serving(nil, 0)
	if len(c.shared) != 0 || c.owners != 0 || len(c.perTarget) != 0 {
		t.Fatalf("left behind: shared %v, owners %d, per target %v", c.shared, c.owners, c.perTarget)
	}
}

// TestOwnerMovingTargetsMovesEveryHost: an owner whose target changes takes
// all its hosts along, and the per-target counts follow.
func TestOwnerMovingTargetsMovesEveryHost(t *testing.T) {
	a, b := newTarget(rules.Target{Name: "ns/a"}), newTarget(rules.Target{Name: "ns/b"})
	c := newClaims()
	o := ingressOwnerOf("x/app")
	hosts := []string{"app.example.com.", "*.app.example.com.", "api.example.com."}
	c.set(o, ownerClaims{hosts: hosts, target: a})
	c.set(o, ownerClaims{hosts: hosts[1:], target: b})
	ix, _, _ := c.publish()
	for qname, want := range map[string]*target{"app.example.com.": nil, "x.app.example.com.": b, "api.example.com.": b} {
		if got := ix.lookup(qname); got != want {
			t.Errorf("%s answered by %v, want %v", qname, got, want)
		}
	}
	if c.perTarget[a] != 0 || c.perTarget[b] != 2 {
		t.Errorf("hosts per target a=%d b=%d, want 0 and 2", c.perTarget[a], c.perTarget[b])
	}
	if exact, wild := ix.size(); exact != 1 || wild != 1 {
		t.Errorf("size %d exact, %d wildcard; want 1 and 1", exact, wild)
	}
}

// TestPublishedIndexIsNeverWrittenAgain: queries read a published index
// without a lock, so later claims must change a copy.
func TestPublishedIndexIsNeverWrittenAgain(t *testing.T) {
	a := newTarget(rules.Target{Name: "ns/a"})
	c := newClaims()
	o := ingressOwnerOf("x/app")
	c.set(o, ownerClaims{hosts: []string{"one.example.com."}, target: a})
	old, changed, _ := c.publish()
	if !changed {
		t.Fatal("first publish reports no change")
	}
	c.set(o, ownerClaims{hosts: []string{"two.example.com."}, target: a})
	if old.lookup("one.example.com.") != a || old.lookup("two.example.com.") != nil {
		t.Fatal("a published index changed after a later claim")
	}
	next, changed, _ := c.publish()
	if !changed || next.lookup("two.example.com.") != a || next.lookup("one.example.com.") != nil {
		t.Fatal("the next publish does not reflect the claim")
	}
	if _, changed, _ := c.publish(); changed {
		t.Fatal("a publish with nothing set reports a change")
	}
}

// TestTargetNumbersAreReusedOnlyInTheNextIndex: slots name targets by
// number; a number that no slot names any more goes to the next target, and
// an index published before still answers with the target it had.
func TestTargetNumbersAreReusedOnlyInTheNextIndex(t *testing.T) {
	a, b, cc := newTarget(rules.Target{Name: "ns/a"}), newTarget(rules.Target{Name: "ns/b"}), newTarget(rules.Target{Name: "ns/c"})
	c := newClaims()
	first, second := ingressOwnerOf("x/first"), ingressOwnerOf("x/second")
	c.set(first, ownerClaims{hosts: []string{"one.example.com."}, target: a})
	before, _, _ := c.publish()
	c.set(first, ownerClaims{hosts: []string{"one.example.com."}, target: b}) // a's number is free now
	c.set(second, ownerClaims{hosts: []string{"two.example.com."}, target: cc})
	after, _, _ := c.publish()
	if got := before.lookup("one.example.com."); got != a {
		t.Errorf("the earlier index answers one with %v, want a", got)
	}
	if got := after.lookup("one.example.com."); got != b {
		t.Errorf("the later index answers one with %v, want b", got)
	}
	if got := after.lookup("two.example.com."); got != cc {
		t.Errorf("the later index answers two with %v, want c", got)
	}
	if len(after.targets) != 2 {
		t.Errorf("the later index numbers %d targets, want 2 (a's number reused)", len(after.targets))
	}
}

// TestPublishCopiesOnlyWhatAChangeTouches: a change of one host copies the
// directory and the table that hold it; every other directory is the live
// index's own, so a change leaves kilobytes of garbage, not the index.
func TestPublishCopiesOnlyWhatAChangeTouches(t *testing.T) {
	a := newTarget(rules.Target{Name: "ns/a"})
	c := newClaims()
	owners := make([]*owner, 5000)
	for i := range owners {
		owners[i] = ingressOwnerOf(fmt.Sprintf("x/app-%d", i))
		c.set(owners[i], ownerClaims{hosts: []string{fmt.Sprintf("app-%d.example.com.", i)}, target: a})
	}
	before, _, _ := c.publish()
	for _, tc := range []struct {
		name  string
		owner *owner
		host  string
		dirs  int // directories that may differ from the index before
	}{
		{"add one host", ingressOwnerOf("x/new"), "new.example.com.", 1},
		{"rename one host", owners[7], "renamed.example.com.", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.set(tc.owner, ownerClaims{hosts: []string{tc.host}, target: a})
			after, changed, copies := c.publish()
			if !changed {
				t.Fatal("no change published")
			}
			if copies > tc.dirs {
				t.Errorf("%d tables copied, want at most %d", copies, tc.dirs)
			}
			differ := 0
			for i := range after.exact.dirs {
				if after.exact.dirs[i] != before.exact.dirs[i] {
					differ++
				}
			}
			if differ == 0 || differ > tc.dirs {
				t.Errorf("%d directories differ from the index before, want 1 to %d", differ, tc.dirs)
			}
			before = after
		})
	}
}
