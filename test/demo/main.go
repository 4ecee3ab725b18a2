// Command demo shows coredns-hairpin end to end on one machine, for a person
// to follow: `make demo`.
//
// By default it runs on the test cluster's real dataplane (test/dataplane:
// kube-proxy, Pods run from our images in network namespaces of their own,
// LoadBalancer addresses behind HAProxy send-proxy), with two ingress
// controllers (nginx configured like ingress-nginx with use-proxy-protocol,
// each on its own class and zone) and the cluster's CoreDNS: our image with
// a stock Corefile that names no hairpin. Then it tells the story in five
// steps, with dig, curl and the real helm: (1) an in-cluster request is
// refused with "broken header"; (2) `helm install` of our chart with two
// targets; (3) each host reaches its own controller, which sees the
// client's real address; (4) the stock Corefile is written again and
// reloaded, and nothing changes; (5) `helm uninstall` brings the public
// answers back and leaves nothing behind. Each step checks its claim, and
// TestDemoStory runs the same story.
//
// Where the real dataplane cannot run (no root and no user namespace, or
// kube-proxy's tools missing), it says why and tells the same story on a
// loopback model: the control plane, CoreDNS, the proxy and the
// controllers as processes on loopback addresses.
//
// Everything is stopped when the story ends, on error and on Ctrl-C. With
// DEMO_KEEP=1 the stack keeps running before the uninstall, with
// instructions to try it: Enter goes on with step 5, Ctrl-C stops.
//
// Environment: KUBEBUILDER_ASSETS (kube-apiserver and etcd), HAIRPIN_HELM
// (helm) and HAIRPIN_BIN (our binaries); `make demo` sets them.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/userns"
)

// envKeep keeps the stack running after the story until Ctrl-C.
const envKeep = "DEMO_KEEP"

// envUserNS=1 runs the demo in a user namespace even as root, as it runs
// for an ordinary user (the test of that path runs as root).
const envUserNS = "DEMO_USERNS"

func main() {
	if (os.Geteuid() != 0 || os.Getenv(envUserNS) == "1") && !userns.Inside() {
		// As rootless container tools run: the same demo again, in a user
		// namespace of its own where it is root. Where the kernel refuses
		// one, the story falls back to loopback and says why.
		code, err := rootless()
		if err == nil {
			os.Exit(code)
		}
		usernsErr = err
	}
	if userns.Inside() {
		usernsErr = userns.Setup()
	}
	os.Exit(demoMain())
}

// usernsErr is why the demo could not use a user namespace, if it tried.
var usernsErr error

// rootless runs the demo in a user namespace and returns its exit status.
func rootless() (int, error) {
	state, err := os.MkdirTemp("", "hairpin-demo-userns-")
	if err != nil {
		return 0, err
	}
	defer removeState(state)
	return userns.Reexec(state)
}

// removeState removes the user namespace's overlay layers; overlayfs
// leaves its work folder without permissions.
func removeState(state string) {
	_ = os.Chmod(filepath.Join(state, "etc-work", "work"), 0o700)
	_ = os.RemoveAll(state)
}

func demoMain() int {
	// Caught until the very end, so that a second Ctrl-C cannot kill the
	// demo halfway through stopping its children.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root, err := os.MkdirTemp("", "hairpin-demo-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	logPath := filepath.Join(root, "demo.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		return 1
	}
	// The harness's helpers take a testing.TB: a Suite with no test is
	// one outside `go test`, logging to the demo's log, its folders under
	// root, a Fatal ending the story with an error.
	tb := harness.NewSuite("demo")
	tb.SetOutput(logFile)
	tb.SetTempRoot(root)
	st := &story{w: os.Stdout, keep: os.Getenv(envKeep) == "1", root: root}

	err = tb.Run(func() error { return st.run(ctx, tb) })
	interrupted := ctx.Err() != nil
	switch {
	case interrupted && st.kept:
		fmt.Println("\nStopping everything ...")
	case interrupted:
		fmt.Println("\nInterrupted; stopping everything ...")
	case err != nil:
		fmt.Fprintf(os.Stderr, "\ndemo failed: %v\n", err)
		fmt.Println("\nStopping everything ...")
	default:
		fmt.Println("\nStopping everything ...")
	}
	if err := tb.Close(); err != nil {
		fmt.Fprintf(logFile, "demo: %v\n", err)
	}
	logFile.Close()

	switch {
	case err != nil && !interrupted:
		fmt.Fprintf(os.Stderr, "The logs of every process are kept in %s (start with %s).\n", root, logPath)
		return 1
	case interrupted && !st.kept:
		os.RemoveAll(root)
		return 130
	}
	if err := os.RemoveAll(root); err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
	}
	fmt.Println("Done.")
	return 0
}
