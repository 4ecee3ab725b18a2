package release

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// readmeMarker is what names this test in the docs-test marker of the
// README's blocks of the path before the first release.
const readmeMarker = "TestReleaseInstallsFromTheRegistry"

// readmeRegistry is the registry the README's commands name for the
// user's own.
const readmeRegistry = "registry.example.com/hairpin"

// readmePath returns the commands of README.md's path before the first
// release, as words: the `make` commands that publish a checkout to the
// user's registry, and the helm commands that install from it.
func readmePath(t *testing.T) (makes, helms [][]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.RepoDir(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range harness.CodeBlocks(string(b)) {
		if !block.IsShell() || !strings.Contains(block.Marker, readmeMarker) {
			continue
		}
		for _, c := range harness.ShellCommands(block.Body) {
			words, err := harness.ShellWords(c.Text)
			if err != nil {
				t.Fatalf("README.md: %s: %v", c.Text, err)
			}
			switch words[0] {
			case "make":
				makes = append(makes, words)
			case "helm":
				helms = append(helms, words)
			default:
				t.Fatalf("README.md: %s: the path runs make and helm only", c.Text)
			}
		}
	}
	if len(makes) != 2 || !slices.Equal(makes[0], []string{"make", "images"}) || len(makes[1]) != 4 || makes[1][1] != "release" ||
		makes[1][2] != "REGISTRY="+readmeRegistry || !strings.HasPrefix(makes[1][3], "VERSION=") {
		t.Fatalf("README.md's path before the first release runs %q; want `make images`, then `make release REGISTRY=%s VERSION=...`", makes, readmeRegistry)
	}
	if len(helms) == 0 {
		t.Fatal("README.md's path before the first release installs nothing")
	}
	return makes, helms
}

// asTheTestRuns turns a README command into the release test's: its
// registry the test's, its version the test's, and helm talking plain
// HTTP to the loopback registry.
func asTheTestRuns(words []string, registry string) []string {
	out := make([]string, 0, len(words)+1)
	for i, w := range words {
		switch {
		case strings.HasPrefix(w, "REGISTRY="):
			w = "REGISTRY=" + registry
		case strings.HasPrefix(w, "VERSION="):
			w = "VERSION=" + testVersion
		case i > 0 && words[i-1] == "--version":
			w = chartVersion
		}
		out = append(out, strings.ReplaceAll(w, readmeRegistry, registry))
	}
	if out[0] == "helm" {
		out = append(out, "--plain-http")
	}
	return out
}
