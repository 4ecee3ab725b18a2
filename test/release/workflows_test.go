package release

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// envActionlint names the actionlint binary build/tools.sh builds
// (`build/tools.sh --actionlint`; the Makefile exports it).
const envActionlint = "HAIRPIN_ACTIONLINT"

// requireActionlint returns HAIRPIN_ACTIONLINT, or skips the test (fails it
// under HAIRPIN_REQUIRE_E2E=1).
func requireActionlint(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(envActionlint)
	if bin == "" {
		harness.SkipOrFail(t, "%s is not set; run `build/tools.sh actionlint` and export %s=$(build/tools.sh --actionlint)", envActionlint, envActionlint)
	}
	return harness.RequireExecutable(t, bin)
}

// actionlint runs actionlint in dir: on the repository's .github/workflows,
// or on the files given.
func actionlint(t *testing.T, bin, dir string, files ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, append([]string{"-color=false"}, files...)...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestWorkflowsPassActionlint lints the CI workflows: any finding fails.
// A workflow with a known mistake shows that actionlint finds it here.
func TestWorkflowsPassActionlint(t *testing.T) {
	bin := requireActionlint(t)
	for _, name := range []string{"ci.yaml", "release.yaml"} {
		if _, err := os.Stat(filepath.Join(harness.RepoDir(t), ".github", "workflows", name)); err != nil {
			t.Errorf("no workflow %s: %v", name, err)
		}
	}
	if out, err := actionlint(t, bin, harness.RepoDir(t)); err != nil {
		t.Errorf("actionlint: %v\n%s", err, out)
	}

	bad := harness.WriteFile(t, t.TempDir(), "bad.yaml",
		"on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ github.no_such_context_field.x }}\n")
	out, err := actionlint(t, bin, filepath.Dir(bad), bad)
	if err == nil || !strings.Contains(out, "bad.yaml") {
		t.Errorf("actionlint passed a workflow with an unknown context property: %v\n%s", err, out)
	}
}
