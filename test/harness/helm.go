package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// EnvHelm names the helm binary that build/tools.sh builds from source
// (`build/tools.sh --helm` prints its path; the Makefile exports it).
const EnvHelm = "HAIRPIN_HELM"

// Helm runs the real helm CLI, against a control plane when Kubeconfig is
// set. Its cache, config and data folders are private to the test, so no
// repository or plugin of the machine's user leaks in.
type Helm struct {
	// Bin is the helm binary.
	Bin string
	// Kubeconfig is passed as --kubeconfig when set.
	Kubeconfig string
	home       string
}

// RequireHelm returns a [Helm] for HAIRPIN_HELM, or skips the test (fails
// it under HAIRPIN_REQUIRE_E2E=1) when it is unset or not executable.
func RequireHelm(t testing.TB) *Helm {
	t.Helper()
	bin := os.Getenv(EnvHelm)
	if bin == "" {
		SkipOrFail(t, "%s is not set; run `build/tools.sh helm` and export %s=$(build/tools.sh --helm)", EnvHelm, EnvHelm)
	}
	if err := executable(bin); err != nil {
		SkipOrFail(t, "%s=%s: %v; run `build/tools.sh helm`", EnvHelm, bin, err)
	}
	return &Helm{Bin: bin, home: t.TempDir()}
}

// WithKubeconfig returns a copy of h that talks to the cluster of kubeconfig.
func (h *Helm) WithKubeconfig(kubeconfig string) *Helm {
	c := *h
	c.Kubeconfig = kubeconfig
	return &c
}

// Run runs helm with args and returns its stdout; on failure the error
// carries the command line and stderr (helm's own message, which names the
// failing value or object).
func (h *Helm) Run(ctx context.Context, args ...string) (string, error) {
	if h.Kubeconfig != "" {
		args = append([]string{"--kubeconfig", h.Kubeconfig}, args...)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.Bin, args...)
	cmd.Env = append(os.Environ(), h.Env()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Env is the environment that gives helm h's private cache, config and
// data folders, for a command that runs helm itself (`make release`).
func (h *Helm) Env() []string {
	return []string{
		"HELM_CACHE_HOME=" + filepath.Join(h.home, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(h.home, "config"),
		"HELM_DATA_HOME=" + filepath.Join(h.home, "data"),
	}
}

// MustRun is Run that fails t on error.
func (h *Helm) MustRun(t testing.TB, args ...string) string {
	t.Helper()
	out, err := h.Run(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
