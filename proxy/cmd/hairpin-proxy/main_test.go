package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	proxyproto "github.com/pires/go-proxyproto"
)

// syncBuffer lets the test read logs while run writes them.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func noEnv(string) (string, bool) { return "", false }

// echoUpstream parses the PROXY header with go-proxyproto and echoes the
// rest back.
func echoUpstream(t *testing.T) string {
	t.Helper()
	return harness.ServeTCP(t, func(c *net.TCPConn) {
		r := bufio.NewReader(c)
		if _, err := proxyproto.Read(r); err != nil {
			return
		}
		_, _ = io.Copy(c, r)
		_ = c.CloseWrite()
	})
}

// startedLine waits for the JSON "hairpin-proxy started" log line.
func startedLine(t *testing.T, logs fmt.Stringer) (route, health string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec struct {
				Msg        string   `json:"msg"`
				Routes     []string `json:"routes"`
				HealthAddr string   `json:"health_addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "hairpin-proxy started" && len(rec.Routes) == 1 {
				_, addr, _ := strings.Cut(rec.Routes[0], "=")
				return addr, rec.HealthAddr
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no startup line in logs:\n%s", logs)
	return "", ""
}

func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	harness.Eventually(t, 5*time.Second, what, cond)
}

func proxyArgs(upstream string) []string {
	return []string{
		"--route", "127.0.0.1:0=" + upstream + ",name=web",
		"--health-addr", "127.0.0.1:0",
		"--log-format", "json",
		"--lameduck", "200ms",
		"--drain-timeout", "5s",
		"--ready-interval", "50ms",
	}
}

// exerciseShutdown holds a connection open across the signal and checks
// the shutdown sequence from the outside.
func exerciseShutdown(t *testing.T, logs fmt.Stringer, signal func(), exited func() bool) {
	t.Helper()
	route, health := startedLine(t, logs)
	waitFor(t, "ready", func() bool { return status("http://"+health+"/readyz") == 200 })

	c, err := net.Dial("tcp", route)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("in flight\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if line, err := br.ReadString('\n'); err != nil || line != "in flight\n" {
		t.Fatalf("echo: %q, %v", line, err)
	}

	signal()
	waitFor(t, "readyz failing after SIGTERM", func() bool { return status("http://"+health+"/readyz") == 503 })
	waitFor(t, "listener closed after lameduck", func() bool {
		nc, err := net.DialTimeout("tcp", route, time.Second)
		if err != nil {
			return true
		}
		_ = nc.Close()
		return false
	})
	if exited() {
		t.Fatal("exited while a connection was still in flight")
	}
	if _, err := c.Write([]byte("still here\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := br.ReadString('\n'); err != nil || line != "still here\n" {
		t.Fatalf("echo during drain: %q, %v", line, err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	_, _ = io.ReadAll(br)
}

// TestSIGTERMDrainsAndExitsZero runs the command in-process and sends the
// test process a real SIGTERM, which run has subscribed to.
func TestSIGTERMDrainsAndExitsZero(t *testing.T) {
	logs := &syncBuffer{}
	code := make(chan int, 1)
	go func() { code <- run(proxyArgs(echoUpstream(t)), noEnv, io.Discard, logs) }()
	exited := func() bool { return len(code) > 0 }
	exerciseShutdown(t, logs, func() {
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}, exited)
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit code %d, want 0; logs:\n%s", c, logs)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("run did not return after drain; logs:\n%s", logs)
	}
	for _, want := range []string{"signal received", "shutdown: listeners closed", "shutdown: complete"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q", want)
		}
	}
}

// TestBinarySIGTERMExitsZero builds the real binary and stops it with
// SIGTERM, as Kubernetes does.
func TestBinarySIGTERMExitsZero(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	bin := filepath.Join(t.TempDir(), "hairpin-proxy")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	logs := &syncBuffer{}
	cmd := exec.Command(bin, proxyArgs(echoUpstream(t))...)
	cmd.Env = []string{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	exerciseShutdown(t, logs, func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}, func() bool { return len(done) > 0 })
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v; logs:\n%s", err, logs)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("process did not exit after drain; logs:\n%s", logs)
	}
}

func TestCommandLineOutcomes(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"help", []string{"--help"}, 0, "HAIRPIN_PROXY_DRAIN_TIMEOUT", ""},
		{"version", []string{"--version"}, 0, "hairpin-proxy dev", ""},
		{"no routes", nil, 2, "", "no routes"},
		{"bad route names itself", []string{"--route", ":8080=ingress"}, 2, "", `route ":8080=ingress"`},
		{"bad protocol", []string{"--route", ":18080=a:80", "--proxy-protocol", "9"}, 2, "", "proxy-protocol: unknown version 9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, noEnv, &stdout, &stderr)
			if code != tc.wantCode {
				t.Fatalf("exit code %d, want %d; stderr %s", code, tc.wantCode, stderr.String())
			}
			if tc.wantCode != 0 && stdout.Len() > 0 {
				t.Errorf("a bad command line printed to stdout (help would bury the error): %q", stdout.String())
			}
			if !strings.Contains(stdout.String(), tc.wantStdout) {
				t.Errorf("stdout %q lacks %q", stdout.String(), tc.wantStdout)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}

func TestBindFailureExitsOne(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var stderr bytes.Buffer
	code := run([]string{"--route", ln.Addr().String() + "=upstream.invalid:80", "--health-addr", "127.0.0.1:0"}, noEnv, io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "address already in use") {
		t.Fatalf("code %d, stderr %s", code, stderr.String())
	}
}
