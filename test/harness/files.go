package harness

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes content to dir/name (mode 0644), for Corefiles, zone
// files and configurations a child reads, and returns the path. It fails t
// when the file cannot be written.
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatalf("harness: %v", err)
	}
	return path
}

// OpenFDs counts this process's open file descriptors, for leak tests; it
// skips the test where /proc/self/fd is not there.
func OpenFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}
