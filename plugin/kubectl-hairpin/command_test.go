package kubectlhairpin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

var built struct {
	once sync.Once
	dir  string
	err  error
}

// command builds cmd/kubectl-hairpin once per test binary, into a folder
// that can go first on PATH for kubectl to find the plugin.
func command(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "kubectl-hairpin-")
		if built.err != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(built.dir, "kubectl-hairpin"), "./cmd/kubectl-hairpin").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return filepath.Join(built.dir, "kubectl-hairpin")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// runCommand runs the built command and returns its exit code and output.
func runCommand(t *testing.T, path string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), "PATH="+built.dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG=/nonexistent")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// TestCommandExitCodes runs the built command: 2 when the cluster cannot
// be read, 1 when a check fails, 0 when none does (warnings included);
// also as `kubectl hairpin check`, which kubectl finds on PATH.
func TestCommandExitCodes(t *testing.T) {
	e := newEnv(t)
	bin := command(t)
	closed := harness.FreeAddr(t, "127.0.0.1") // nothing listens there
	closedKubeconfig := harness.WriteFile(t, t.TempDir(), "kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, closed))
	refused := harness.WriteFile(t, t.TempDir(), "kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: not-a-token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, e.cp.Config.Host))

	kubectl := harness.RequireExecutable(t, "/usr/bin/kubectl")
	cases := []struct {
		name    string
		cluster func(*testing.T) *cluster // nil: nothing applied
		args    []string
		code    int
		stdout  string // a piece of it
		stderr  string
	}{
		{"ClosedPortIsUnreadable", nil, []string{"check", "--kubeconfig", closedKubeconfig}, 2, "", "the cluster could not be read"},
		{"RefusedCredentialsAreUnreadable", nil, []string{"check", "--kubeconfig", refused}, 2, "", "Unauthorized"},
		{"MissingKubeconfigIsUnreadable", nil, []string{"check"}, 2, "", "the cluster could not be read"},
		{"UnknownOutputIsAUsageError", nil, []string{"check", "-o", "yaml", "--kubeconfig", e.cp.Kubeconfig}, 2, "", `-o "yaml": want table or json`},
		{"HealthyPasses", func(*testing.T) *cluster { return healthyCluster() }, []string{"check", "--kubeconfig", e.cp.Kubeconfig}, 0, "Status: 0 failures, 0 warnings", ""},
		{"WarningsDoNotFail", func(*testing.T) *cluster { c := healthyCluster(); addNodeLocalDNS(c, ""); return c },
			[]string{"check", "--kubeconfig", e.cp.Kubeconfig}, 0, "Status: 0 failures, 1 warning", ""},
		{"BrokenFails", brokenCluster, []string{"check", "--kubeconfig", e.cp.Kubeconfig, "-o", "json"}, 1, `"status": "fail"`, ""},
		{"AsKubectlPlugin", brokenCluster, []string{"--kubeconfig", e.cp.Kubeconfig, "hairpin", "check"}, 1, "× ingress class \"tenant-a\"", ""},
		// The connection flags work before the subcommand as after it:
		// kubectl passes `kubectl hairpin --kubeconfig X check` as it is.
		{"ConnectionFlagsBeforeCheck", func(*testing.T) *cluster { return healthyCluster() },
			[]string{"--kubeconfig", e.cp.Kubeconfig, "--context", "envtest", "-n", "hairpin-system", "--request-timeout", "20s", "check"}, 0, "Status: 0 failures, 0 warnings", ""},
		{"ConnectionFlagsAfterCheck", func(*testing.T) *cluster { return healthyCluster() },
			[]string{"check", "--kubeconfig", e.cp.Kubeconfig, "--context", "envtest", "-n", "hairpin-system", "--request-timeout", "20s"}, 0, "Status: 0 failures, 0 warnings", ""},
		{"ConnectionFlagsOnBothSides", func(*testing.T) *cluster { return healthyCluster() },
			[]string{"--kubeconfig=" + e.cp.Kubeconfig, "check", "--context=envtest", "-o", "json"}, 0, `"id": "targets-found"`, ""},
		{"NamespaceBeforeCheckIsUsed", func(*testing.T) *cluster { return healthyCluster() },
			[]string{"-n", "elsewhere", "--kubeconfig", e.cp.Kubeconfig, "check"}, 1, "no target in elsewhere", ""},
		{"ContextBeforeCheckIsUsed", nil, []string{"--context", "nosuch", "--kubeconfig", e.cp.Kubeconfig, "check"}, 2, "", `context "nosuch" does not exist`},
		{"UnknownFlagBeforeCheck", nil, []string{"--kubeconfig", e.cp.Kubeconfig, "--no-such-flag", "check"}, 2, "", "unknown flag: --no-such-flag"},
		{"AsKubectlPluginFlagsFirst", brokenCluster, []string{"hairpin", "--kubeconfig", e.cp.Kubeconfig, "check"}, 1, "× ingress class \"tenant-a\"", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cluster != nil {
				e.apply(t, tc.cluster(t))
			}
			path, args := bin, tc.args
			switch tc.name {
			case "AsKubectlPlugin":
				path = kubectl
				// kubectl refuses its own flags before a plugin's name.
				args = append(tc.args[2:], tc.args[:2]...)
			case "AsKubectlPluginFlagsFirst":
				path = kubectl
			}
			code, stdout, stderr := runCommand(t, path, args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d; want %d with stdout containing %q and stderr %q\nstdout:\n%s\nstderr:\n%s", code, tc.code, tc.stdout, tc.stderr, stdout, stderr)
			}
			if slices.Contains(args, "json") {
				var r Report
				if err := json.Unmarshal([]byte(stdout), &r); err != nil || len(r.Checks) == 0 {
					t.Fatalf("-o json printed no report (%v):\n%s", err, stdout)
				}
			}
		})
	}
}

// TestCommandTakesKubectlConnectionFlags: `check --help` lists each of
// kubectl's connection flags (cli-runtime v0.37's ConfigFlags.AddFlags),
// and each is accepted before the subcommand as after it.
func TestCommandTakesKubectlConnectionFlags(t *testing.T) {
	bin := command(t)
	configFlags := []string{
		"--kubeconfig", "--cache-dir", "--client-certificate", "--client-key", "--token", "--as", "--as-uid",
		"--as-group", "--as-user-extra", "--username", "--password", "--cluster", "--user", "-n, --namespace",
		"--context", "-s, --server", "--tls-server-name", "--insecure-skip-tls-verify", "--certificate-authority",
		"--request-timeout", "--disable-compression", "--proxy-url",
	}
	code, _, help := runCommand(t, bin, "check", "--help")
	if code != 0 {
		t.Fatalf("check --help: exit %d\n%s", code, help)
	}
	for _, f := range configFlags {
		if !strings.Contains(help, "  "+f+" ") {
			t.Errorf("check --help does not list %s:\n%s", f, help)
		}
	}
	// A kubeconfig that cannot be read ends each run at the same point:
	// every flag before it was taken, in either place.
	for _, args := range [][]string{
		{"--cache-dir", "/tmp/c", "--as", "u", "--as-group", "g", "--as-user-extra", "k=v", "--cluster", "c", "--user", "u", "-s", "https://127.0.0.1:1", "--tls-server-name", "n", "--insecure-skip-tls-verify", "--disable-compression", "--proxy-url", "http://127.0.0.1:1", "--request-timeout", "1s", "--kubeconfig", "/nonexistent"},
	} {
		before := append(slices.Clone(args), "check")
		after := append([]string{"check"}, args...)
		for _, a := range [][]string{before, after} {
			code, _, stderr := runCommand(t, bin, a...)
			if code != 2 || !strings.Contains(stderr, "/nonexistent") {
				t.Errorf("%v: exit %d; want 2, the kubeconfig unreadable:\n%s", a, code, stderr)
			}
		}
	}
}
