// Command demo shows coredns-hairpin end to end on one machine, for a person
// to follow: `make demo`.
//
// It starts a real kube-apiserver and etcd, an nginx configured like
// ingress-nginx with use-proxy-protocol on a "LoadBalancer IP", a public DNS
// stand-in, our hairpin-proxy on its Service's ClusterIP, and our CoreDNS
// twice (kube-system's stock Corefile, and the same plus the hairpin stanza);
// the same stack as the end-to-end tests (test/e2e). Then it tells the story
// with dig and curl: the in-cluster request that nginx refuses, the DNS
// answer that hairpin changes, the request that works, and the real client
// address in nginx's access log.
//
// Everything is stopped when the story ends, on error and on Ctrl-C. With
// DEMO_KEEP=1 the stack keeps running, with instructions to try it, until
// Ctrl-C.
//
// Environment: KUBEBUILDER_ASSETS (kube-apiserver and etcd, `make tools`)
// and HAIRPIN_BIN (our binaries, `make build`); `make demo` sets both.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

// envKeep keeps the stack running after the story until Ctrl-C.
const envKeep = "DEMO_KEEP"

func main() { os.Exit(demoMain()) }

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
	tb := newDemoTB(ctx, root, logFile)
	st := &story{w: os.Stdout, keep: os.Getenv(envKeep) == "1", root: root}

	err = tb.run(func() error { return st.run(ctx, tb) })
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
	tb.cleanup()
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
