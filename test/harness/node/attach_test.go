package node_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

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

// upperScript serves on 127.0.0.1:7000 only: it reads each connection to
// its end and answers with what it read in upper case.
const upperScript = `import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 7000))
s.listen()
while True:
    c, _ = s.accept()
    b = b""
    while True:
        d = c.recv(4096)
        if not d:
            break
        b += d
    c.sendall(b.upper())
    c.close()
`

// forwarding is kubectl port-forward's line for a listener it opened.
var forwarding = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> `)

// testKubectlPortForward runs `kubectl port-forward` as the docs do,
// through the apiserver and the node's kubelet API, to a Pod whose server
// listens on its loopback only: the bytes go both ways, the local
// client's half-close reaching the server; a port nothing listens on ends
// the connection and kubectl with the error, instead of hanging.
func testKubectlPortForward(t *testing.T, f *fixture) {
	kubectl := harness.RequireKubectl(t)
	ns := f.namespace(t, "portforward")
	pod := hostPod("upper", "/usr/bin/python3", "-c", upperScript)
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{
			"/usr/bin/python3", "-c", `import socket; socket.create_connection(("127.0.0.1", 7000)).close()`,
		}}},
		PeriodSeconds: 1,
	}
	f.create(t, ns, pod)
	f.waitReady(t, ns, "upper")
	for _, tc := range []struct {
		name       string
		port       int
		send, want string
		wantErr    string // kubectl's, once the connection ends
	}{
		{name: "BytesBothWaysToAListenerOnThePodsLoopbackOnly", port: 7000, send: "hello\n", want: "HELLO\n"},
		{name: "PortNothingListensOnEndsTheConnectionAndKubectlWithTheError", port: 7001, wantErr: "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", f.cp.Kubeconfig, "-n", ns,
				"port-forward", "--address", "127.0.0.1", "pod/upper", ":"+strconv.Itoa(tc.port))
			var errOut syncBuffer
			cmd.Stderr = &errOut
			stdout, err := cmd.StdoutPipe()
			must(t, err)
			must(t, cmd.Start())
			exited := make(chan error, 1)
			lines := bufio.NewScanner(stdout)
			local := ""
			for local == "" && lines.Scan() {
				if m := forwarding.FindStringSubmatch(lines.Text()); m != nil {
					local = m[1]
				}
			}
			go func() {
				for lines.Scan() {
				}
				exited <- cmd.Wait()
			}()
			if local == "" {
				t.Fatalf("kubectl port-forward named no local port: %v\n%s", <-exited, errOut.String())
			}
			c, err := net.Dial("tcp", "127.0.0.1:"+local)
			must(t, err)
			defer c.Close()
			must(t, c.SetDeadline(time.Now().Add(10*time.Second)))
			_, err = c.Write([]byte(tc.send))
			must(t, err)
			must(t, c.(*net.TCPConn).CloseWrite())
			got, err := io.ReadAll(c)
			if err != nil || string(got) != tc.want {
				t.Fatalf("through port-forward to port %d: %q, %v; want %q\nkubectl: %s", tc.port, got, err, tc.want, errOut.String())
			}
			if tc.wantErr == "" {
				return
			}
			select {
			case err := <-exited:
				if err == nil || !strings.Contains(errOut.String(), tc.wantErr) {
					t.Fatalf("kubectl port-forward exited with %v, stderr %q; want a failure holding %q", err, errOut.String(), tc.wantErr)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("kubectl port-forward still runs 10 s after the forward failed\n%s", errOut.String())
			}
		})
	}
}
