package userns

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMapHoldsOnlyItsRanges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "uid_map")
	// One caller mapped to root, and a subordinate range as newuidmap
	// writes it.
	if err := os.WriteFile(path, []byte("         0       1000          1\n         1     100000      65536\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := readMap(path)
	for _, tc := range []struct {
		id   uint32
		want bool
	}{
		{0, true}, {1, true}, {65532, true}, {65536, true}, {65537, false}, {1 << 31, false},
	} {
		if got := m.holds(tc.id); got != tc.want {
			t.Errorf("holds(%d) = %v, want %v", tc.id, got, tc.want)
		}
	}
	if m := readMap(filepath.Join(dir, "missing")); !m.holds(0) || m.holds(1) {
		t.Errorf("an unreadable map must hold 0 alone: %v", m)
	}
}

func TestOutsideAUserNamespaceIDsStay(t *testing.T) {
	t.Setenv(Env, "")
	for _, id := range []uint32{0, 101, 65532} {
		if got := ID(id); got != id {
			t.Errorf("ID(%d) = %d outside a user namespace", id, got)
		}
		if got := GID(id); got != id {
			t.Errorf("GID(%d) = %d outside a user namespace", id, got)
		}
	}
	if u, g := Owner(-1, 65532); u != -1 || g != 65532 {
		t.Errorf("Owner(-1, 65532) = %d, %d", u, g)
	}
}
