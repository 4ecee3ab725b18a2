package node_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// deletedLine is what kubectl run --rm prints on stdout once it has
// deleted the Pod.
var deletedLine = regexp.MustCompile(`(?m)^pod "[^"]+" deleted.*\n`)

// testKubectlRunAttaches runs `kubectl run --rm -i --restart=Never` as the
// docs do, through the apiserver and the node's kubelet API: kubectl
// prints what the command wrote before the attach from the logs (on its
// stdout, as with kubelet), then what it writes after it, each stream on
// its own, every line exactly once whether the command is still running
// when kubectl attaches or has already ended; it exits with the command's
// exit code and deletes the Pod.
func testKubectlRunAttaches(t *testing.T, f *fixture) {
	kubectl := harness.RequireKubectl(t)
	ns := f.namespace(t, "attach")
	for _, tc := range []struct {
		name, script, stdin string
		wantOut, wantErr    string
		wantCode            int
	}{
		{
			name:    "OutputBeforeTheAttachOnceAndAfterItOnItsStream",
			script:  "echo early; sleep 2; echo late; echo warning >&2",
			wantOut: "early\nlate\n", wantErr: "warning\n",
		},
		{
			name:    "CommandThatEndsBeforeTheAttach",
			script:  "echo quick",
			wantOut: "quick\n",
		},
		{
			name:    "ExitCodeIsTheCommands",
			script:  "echo failing; exit 3",
			wantOut: "failing\n", wantCode: 3,
		},
		{
			name:    "StdinReachesTheCommandAndEndsWithKubectls",
			script:  "tr a-z A-Z",
			stdin:   "hello\n",
			wantOut: "HELLO\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ToLower(tc.name)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", f.cp.Kubeconfig, "-n", ns,
				"run", name, "--rm", "-i", "--restart=Never", "--image="+hostImage,
				"--overrides", `{"spec":{"nodeName":"node-a"}}`,
				"--command", "--", "sh", "-c", tc.script)
			cmd.Stdin = strings.NewReader(tc.stdin)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			stdout := deletedLine.ReplaceAllString(out.String(), "")
			stderr := errOut.String()
			errOnce := tc.wantErr == "" || strings.Count(stderr, tc.wantErr) == 1
			if stdout != tc.wantOut || code != tc.wantCode || !errOnce || strings.Contains(stderr, "couldn't attach") {
				t.Fatalf("kubectl run -i: exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want it to hold %q once)",
					code, tc.wantCode, out.String(), tc.wantOut, stderr, tc.wantErr)
			}
			if !deletedLine.MatchString(out.String()) {
				t.Errorf("kubectl run --rm did not say it deleted the Pod: %q", out.String())
			}
			f.waitGone(t, ns, name)
		})
	}
}
