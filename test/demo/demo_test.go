package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// TestDemoStory runs the loopback story of `make demo` (a machine where
// the real dataplane cannot run), every step with its claim (broken,
// install, fixed per controller, survives a re-render, uninstall), and
// fails on the first claim that is not true, with the story so far. It runs
// as DEMO_KEEP=1 does, with Enter pressed at the pause. The real
// dataplane's story is [TestDemoRunsInAUserNamespace]'s: the same claims,
// told by the built demo as an ordinary user's `make demo` runs it.
func TestDemoStory(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: starts kube-apiserver, etcd, two nginx, CoreDNS, helm and the proxy")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	var out bytes.Buffer
	paused := false
	st := &story{w: &out, root: t.TempDir(), keep: true, loopback: true, wait: func(context.Context) bool { paused = true; return true }}
	err := st.run(ctx, t)
	t.Logf("the story:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !paused {
		t.Error("DEMO_KEEP=1 did not pause before the uninstall")
	}
}

// TestDemoRunsInAUserNamespace runs the built demo as an ordinary user's
// `make demo` runs it: re-executed in a user namespace of its own, where
// only the caller is mapped (to root), so every Pod's user and every image
// file's owner falls back to it. DEMO_USERNS=1 takes that path as root
// too; the story must be the real dataplane's, from start to "Done.", each
// claim held (the demo exits non-zero on the first that is not true), and
// with DEMO_KEEP=1 it pauses before the uninstall until Enter.
func TestDemoRunsInAUserNamespace(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: the whole demo in a user namespace")
	}
	if why := dataplaneUnavailable(); why != "" {
		harness.SkipOrFail(t, "demo: %s", why)
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err != nil || strings.TrimSpace(string(b)) == "0" {
		harness.SkipOrFail(t, "demo: this kernel allows no user namespaces (user.max_user_namespaces: %q, %v)", b, err)
	}
	bin := filepath.Join(t.TempDir(), "demo")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Dir = harness.RepoDir(t)
	cmd.Env = append(os.Environ(), envUserNS+"=1", envKeep+"=1")
	cmd.Stdin = strings.NewReader("\n")
	out, err := cmd.CombinedOutput()
	t.Logf("the demo in a user namespace:\n%s", out)
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	for _, want := range []string{"real dataplane (kube-proxy", "kubectl hairpin check", "keeps running (DEMO_KEEP=1): Enter uninstalls", "release \"hairpin\" uninstalled", "\nDone.\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}
	if strings.Contains(string(out), "telling the story on the loopback model instead") {
		t.Error("the demo fell back to the loopback story")
	}
}
