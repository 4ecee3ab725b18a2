package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	kh "github.com/coredns-hairpin/hairpin/plugin/kubectl-hairpin"
)

// defaultRequestTimeout bounds each request when --request-timeout is not
// given, so that an apiserver that accepts but never answers still ends
// the run with exit code 2.
const defaultRequestTimeout = 30 * time.Second

// runCheck runs `kubectl hairpin check`.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("kubectl hairpin check", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	output := fs.StringP("output", "o", "table", "output format: table or json")
	opts := kh.Options{Version: version}
	fs.StringVarP(&opts.TargetsNamespace, "namespace", "n", kh.DefaultTargetsNamespace, "the namespace of the target Services (the chart's release namespace)")
	fs.StringVar(&opts.CoreDNSNamespace, "coredns-namespace", kh.DefaultCoreDNSNamespace, "the namespace of CoreDNS's kube-dns Service")

	// The caller's kubeconfig, as kubectl reads it: --kubeconfig, else
	// $KUBECONFIG, else ~/.kube/config, and the usual overrides; kubectl
	// does not pass its own flags to a plugin. --namespace is ours.
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	fs.StringVar(&rules.ExplicitPath, "kubeconfig", "", "path to the kubeconfig file")
	overrides := &clientcmd.ConfigOverrides{}
	names := clientcmd.RecommendedConfigOverrideFlags("")
	names.ContextOverrideFlags.Namespace = clientcmd.FlagInfo{}
	clientcmd.BindOverrideFlags(overrides, fs, names)

	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: kubectl hairpin check [flags]\n\nReads the cluster (get and list only, and the pods' metrics through the\napiserver's pod proxy) and reports; exit 0: nothing failed, 1: a check\nfailed, 2: the cluster could not be read.\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		return exitUnreadable
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kubectl hairpin check: unexpected argument %q\n", fs.Arg(0))
		return exitUnreadable
	}
	write := kh.WriteTable
	switch *output {
	case "table":
	case "json":
		write = kh.WriteJSON
	default:
		fmt.Fprintf(stderr, "kubectl hairpin check: -o %q: want table or json\n", *output)
		return exitUnreadable
	}

	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		fmt.Fprintf(stderr, "kubectl hairpin check: %v: kubeconfig: %v\n", kh.ErrUnreadable, err)
		return exitUnreadable
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultRequestTimeout
	}
	// One run makes a few dozen reads in a row; client-go's default of
	// 5 per second would make it wait for most of them.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	clients, err := kh.NewClients(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "kubectl hairpin check: %v: %v\n", kh.ErrUnreadable, err)
		return exitUnreadable
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	report, err := kh.Run(ctx, clients, opts)
	if err != nil {
		fmt.Fprintf(stderr, "kubectl hairpin check: %v\n", err)
		return exitUnreadable
	}
	if err := write(stdout, report); err != nil {
		fmt.Fprintf(stderr, "kubectl hairpin check: %v\n", err)
		return exitUnreadable
	}
	if report.Failed() {
		return exitFailed
	}
	return exitOK
}
