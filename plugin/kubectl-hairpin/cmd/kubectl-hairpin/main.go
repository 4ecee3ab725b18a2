// Command kubectl-hairpin is the `kubectl hairpin` plugin (kubectl runs it
// when it is on PATH). Its check subcommand reads a live cluster with the
// caller's kubeconfig and says whether hairpin traffic is fixed:
//
//	kubectl hairpin check [-o table|json] [--namespace hairpin-system] [--coredns-namespace kube-system]
//
// Exit codes: 0 when nothing failed (warnings do not fail), 1 when a check
// failed, 2 when the cluster could not be read (or the command line is
// wrong).
package main

import (
	"fmt"
	"io"
	"os"
)

// version is stamped by the Makefile (-X main.version=...).
var version = "dev"

// The exit codes of the command line contract.
const (
	exitOK         = 0
	exitFailed     = 1
	exitUnreadable = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `kubectl hairpin: is hairpin traffic fixed in this cluster?

Usage:
  kubectl hairpin check [flags]   read the cluster and report (read-only)
  kubectl hairpin version         print the version

Run "kubectl hairpin check --help" for its flags.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUnreadable
	}
	switch args[0] {
	case "check":
		return runCheck(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, version)
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "kubectl hairpin: unknown command %q\n\n%s", args[0], usage)
	return exitUnreadable
}
