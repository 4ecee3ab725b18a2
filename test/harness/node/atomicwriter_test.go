package node

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestAtomicWriterSwapsDataAndRemovesWhatIsGone(t *testing.T) {
	dir := t.TempDir()
	f := func(s string) file { return file{data: []byte(s), mode: 0o644, uid: -1, gid: -1} }
	steps := []struct {
		payload map[string]file
		changed bool
		links   []string // top-level names besides ..data and the timestamped dir
	}{
		{map[string]file{"a": f("1"), "d/b": f("2")}, true, []string{"a", "d"}},
		{map[string]file{"a": f("1"), "d/b": f("2")}, false, []string{"a", "d"}},
		{map[string]file{"a": f("3")}, true, []string{"a"}},
	}
	var last string
	for i, s := range steps {
		changed, err := writeAtomic(dir, s.payload)
		if err != nil || changed != s.changed {
			t.Fatalf("step %d: changed=%v err=%v, want changed=%v", i, changed, err, s.changed)
		}
		data, err := os.Readlink(filepath.Join(dir, dataDir))
		if err != nil {
			t.Fatal(err)
		}
		if changed == (data == last) {
			t.Errorf("step %d: ..data -> %q (was %q), changed=%v", i, data, last, changed)
		}
		last = data
		var names []string
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			switch n := e.Name(); {
			case n == dataDir:
			case n == data:
			default:
				names = append(names, n)
			}
		}
		if !slices.Equal(names, s.links) {
			t.Errorf("step %d: entries %v, want %v", i, names, s.links)
		}
		for p, want := range s.payload {
			if got, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(got) != string(want.data) {
				t.Errorf("step %d: %s = %q, %v", i, p, got, err)
			}
		}
	}
}

// TestAtomicWriterKeepsAMountPoint: a folder in the volume is the mount
// point of a volume mounted inside this one (kube-dns's
// /etc/coredns/custom in /etc/coredns): a new payload removes the links it
// no longer has, never that folder.
func TestAtomicWriterKeepsAMountPoint(t *testing.T) {
	dir := t.TempDir()
	f := func(s string) file { return file{data: []byte(s), mode: 0o644, uid: -1, gid: -1} }
	if _, err := writeAtomic(dir, map[string]file{"Corefile": f("1"), "old": f("2")}); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "custom"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := writeAtomic(dir, map[string]file{"Corefile": f("3")}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "custom")); err != nil || !fi.IsDir() {
		t.Errorf("the mount point custom after a new payload: %v, %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "old")); !os.IsNotExist(err) {
		t.Errorf("the link of old, which the payload no longer has: %v; want it gone", err)
	}
}

func TestAtomicWriterRefusesPathsOutsideTheVolume(t *testing.T) {
	for _, p := range []string{"../x", "a/../../x", "/etc/passwd", "..data", ""} {
		if _, err := writeAtomic(t.TempDir(), map[string]file{p: {data: []byte("x"), mode: 0o644}}); err == nil {
			t.Errorf("path %q was accepted", p)
		}
	}
}
