package shim

import (
	"os"
	"path/filepath"
	"testing"
)

func TestInRootKeepsLinksAndDotDotInsideTheRoot(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "run/secrets"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "var"), 0o755))
	must(os.Symlink("/run", filepath.Join(root, "var/run")))
	must(os.Symlink("../../../../etc", filepath.Join(root, "run/escape")))
	must(os.Symlink("secrets", filepath.Join(root, "run/rel")))
	for _, tc := range []struct{ in, want string }{
		{"/var/run/secrets/token", "/run/secrets/token"},
		{"/run/escape/passwd", "/etc/passwd"},
		{"/../../etc/shadow", "/etc/shadow"},
		{"/run/rel/x", "/run/secrets/x"},
		{"/new/dir", "/new/dir"},
	} {
		got, err := InRoot(root, tc.in)
		if err != nil || got != filepath.Join(root, tc.want) {
			t.Errorf("InRoot(%q) = %q, %v; want %q", tc.in, got, err, filepath.Join(root, tc.want))
		}
	}
	must(os.Symlink("loop", filepath.Join(root, "loop")))
	if _, err := InRoot(root, "/loop/x"); err == nil {
		t.Error("a link loop resolved")
	}
}
