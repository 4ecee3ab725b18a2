package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Environment variables read by the harness.
const (
	// EnvAssets names the folder with kube-apiserver and etcd.
	EnvAssets = "KUBEBUILDER_ASSETS"
	// EnvRequireE2E, when "1", turns a missing prerequisite into a test failure
	// instead of a skip.
	EnvRequireE2E = "HAIRPIN_REQUIRE_E2E"
	// EnvBin names the folder with our built binaries (coredns, hairpin-proxy).
	EnvBin = "HAIRPIN_BIN"
)

// SkipOrFail skips the test with the formatted reason, or fails it when
// HAIRPIN_REQUIRE_E2E=1 (as `make test` sets): there, a missing
// prerequisite is an error.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s (%s=1, so this is an error)", msg, EnvRequireE2E)
	}
	t.Skip(msg)
}

// Required reports whether a missing prerequisite is an error
// (HAIRPIN_REQUIRE_E2E=1), for code that has no test to skip, such as a
// TestMain.
func Required() bool { return os.Getenv(EnvRequireE2E) == "1" }

// RequireRoot skips the test unless it runs as root with every one of tools
// on PATH, or fails it under HAIRPIN_REQUIRE_E2E=1. what names the part of
// the harness or the test that needs them.
func RequireRoot(t testing.TB, what string, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(t, "%s: needs root", what)
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			SkipOrFail(t, "%s: needs %s on PATH", what, tool)
		}
	}
}

// RequireAssets returns the control-plane binary folder from
// KUBEBUILDER_ASSETS. When it is unset, or lacks kube-apiserver or etcd, the
// test is skipped, or failed under HAIRPIN_REQUIRE_E2E=1.
func RequireAssets(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(EnvAssets)
	if dir == "" {
		SkipOrFail(t, "%s is not set; run `make tools` and export %s=$(build/tools.sh --dir) to run tests against a real kube-apiserver and etcd", EnvAssets, EnvAssets)
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if err := executable(filepath.Join(dir, name)); err != nil {
			SkipOrFail(t, "%s=%s: %v; run `make tools`", EnvAssets, dir, err)
		}
	}
	return dir
}

// RequireBinary returns the path of one of our built binaries (for example
// "coredns" or "hairpin-proxy") in HAIRPIN_BIN. When HAIRPIN_BIN is unset or
// the binary is missing, the test is skipped, or failed under
// HAIRPIN_REQUIRE_E2E=1.
func RequireBinary(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv(EnvBin)
	if dir == "" {
		SkipOrFail(t, "%s is not set; run `make build` and export %s=$PWD/bin", EnvBin, EnvBin)
	}
	path := filepath.Join(dir, name)
	if err := executable(path); err != nil {
		SkipOrFail(t, "%s: %v; run `make build`", EnvBin, err)
	}
	return path
}

// RequireKubectl returns the kubectl that `make tools` builds from
// k8s.io/kubernetes at the version of the test's control plane, in
// KUBEBUILDER_ASSETS: the docs' commands run with it, never with whatever
// kubectl the machine has. Without it the test is skipped, or failed under
// HAIRPIN_REQUIRE_E2E=1.
func RequireKubectl(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(EnvAssets)
	if dir == "" {
		SkipOrFail(t, "%s is not set; run `make tools` and export %s=$(build/tools.sh --dir)", EnvAssets, EnvAssets)
	}
	path := filepath.Join(dir, "kubectl")
	if err := executable(path); err != nil {
		SkipOrFail(t, "%s=%s: %v; run `make tools`", EnvAssets, dir, err)
	}
	return path
}

// RequireExecutable returns path when it is an executable file, and otherwise
// skips the test, or fails it under HAIRPIN_REQUIRE_E2E=1. Use it for system
// tools such as /usr/sbin/nginx or /usr/bin/dig.
func RequireExecutable(t testing.TB, path string) string {
	t.Helper()
	if err := executable(path); err != nil {
		SkipOrFail(t, "%v", err)
	}
	return path
}

// Executable returns an error saying why path is not an executable file,
// or nil.
func Executable(path string) error { return executable(path) }

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("binary not found: %w", err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}
