package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// The docs tests read what the documentation tells a user to run or to
// write (helm commands, values files, kustomize overlays, YAML of other
// projects' objects) and run it or check it against what the chart and the
// images really are, so that a documented command that the chart refuses,
// or a documented value that means something else, fails `make test`.

// docFiles returns the Markdown files a user reads, relative to the
// repository: the pages of the docs test (harness.DocPages) and
// CHANGELOG.md.
func docFiles(t testing.TB) []string {
	t.Helper()
	files, err := harness.DocPages(repoDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return append(files, "CHANGELOG.md")
}

// readDoc returns the text of a file relative to the repository.
func readDoc(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoDir(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// yamlBlocks returns the YAML code blocks of a doc.
func yamlBlocks(t testing.TB, rel string) []harness.CodeBlock {
	t.Helper()
	var out []harness.CodeBlock
	for _, b := range harness.CodeBlocks(readDoc(t, rel)) {
		if b.Lang == "yaml" {
			out = append(out, b)
		}
	}
	return out
}

// TestShellWordsSplitsAsShDoes is a table test of the docs' command parser.
func TestShellWordsSplitsAsShDoes(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`helm install hairpin chart -n ns`, []string{"helm", "install", "hairpin", "chart", "-n", "ns"}},
		{`--set-json 'targets.a.zones=["x.org"]'`, []string{"--set-json", `targets.a.zones=["x.org"]`}},
		{"a \\\n  b", []string{"a", "b"}},
		{`a "b c" d # comment`, []string{"a", "b c", "d"}},
		{`--set x=a#b`, []string{"--set", "x=a#b"}},
	}
	for _, tt := range tests {
		got, err := harness.ShellWords(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("shellWords(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
	if _, err := harness.ShellWords(`a 'b`); err == nil {
		t.Errorf("an unterminated quote was accepted")
	}
}

// TestShellBackgroundIsALoneTrailingAmpersand is a table test of how the
// docs test tells a background job from a command it waits for.
func TestShellBackgroundIsALoneTrailingAmpersand(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		bg       bool
	}{
		{"kubectl port-forward deploy/x 9090 &", "kubectl port-forward deploy/x 9090", true},
		{"sleep 1&", "sleep 1", true},
		{"a \\\n  b &\n", "a \\\n  b", true},
		{"a && b", "a && b", false},
		{"a 2>&1", "a 2>&1", false},
		{"a >&", "a >&", false},
		{"a", "a", false},
	} {
		got, bg := harness.ShellBackground(tt.in)
		if got != tt.want || bg != tt.bg {
			t.Errorf("ShellBackground(%q) = %q, %v; want %q, %v", tt.in, got, bg, tt.want, tt.bg)
		}
	}
}
