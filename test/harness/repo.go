package harness

import (
	"debug/elf"
	"path/filepath"
	"runtime"
	"testing"
)

// RepoDir returns the repository's root folder, found from this source
// file, whatever package's folder the test runs in.
func RepoDir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("harness: cannot locate the repository")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// ELFMachine is the ELF e_machine of each GOARCH our images are built for.
var ELFMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
