// Command kubectl-hairpin is the `kubectl hairpin` plugin (kubectl runs it
// when it is on PATH). Its check subcommand reads a live cluster with the
// caller's kubeconfig and says whether hairpin traffic is fixed:
//
//	kubectl hairpin check [-o table|json] [--namespace hairpin-system] [--coredns-namespace kube-system]
//
// kubectl's connection flags (--kubeconfig, --context, ...) and -n go
// before the subcommand or after it: `kubectl hairpin --kubeconfig X check`.
//
// Exit codes: 0 when nothing failed (warnings do not fail), 1 when a check
// failed, 2 when the cluster could not be read (or the command line is
// wrong).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
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
  kubectl hairpin [connection flags] check [flags]   read the cluster and report (read-only)
  kubectl hairpin version                            print the version

The connection flags (--kubeconfig, --context and kubectl's others, and -n)
go before "check" or after it.

Run "kubectl hairpin check --help" for its flags.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--version" {
		args[0] = "version"
	}
	global, args, err := splitConnectionFlags(args)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return exitOK
	case err != nil:
		fmt.Fprintf(stderr, "kubectl hairpin: %v\n\n%s", err, usage)
		return exitUnreadable
	case len(args) == 0:
		fmt.Fprint(stderr, usage)
		return exitUnreadable
	}
	switch args[0] {
	case "check":
		return runCheck(append(global, args[1:]...), stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, version)
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "kubectl hairpin: unknown command %q\n\n%s", args[0], usage)
	return exitUnreadable
}

// splitConnectionFlags splits the flags before the subcommand from the
// subcommand and its arguments. kubectl refuses its own flags before a
// plugin's name, so `kubectl hairpin --kubeconfig X check` is how users
// pass them (as to `linkerd --kubeconfig X check`): they are the check's
// flags, given early.
func splitConnectionFlags(args []string) (global, rest []string, err error) {
	fs, _ := checkFlags(io.Discard)
	fs.SetInterspersed(false)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	rest = fs.Args()
	global = args[:len(args)-len(rest)]
	if n := len(global); n > 0 && global[n-1] == "--" {
		global = global[:n-1]
	}
	return global, rest, nil
}
