package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strings"
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

// checkConfig is what the flags of `kubectl hairpin check` set.
type checkConfig struct {
	output    string
	opts      kh.Options
	rules     *clientcmd.ClientConfigLoadingRules
	overrides *clientcmd.ConfigOverrides
	cacheDir  string
	userExtra []string
}

// checkFlags are the flags of `kubectl hairpin check`: ours, and the
// connection flags of kubectl (cli-runtime's ConfigFlags), but -n, which
// names the targets' namespace.
func checkFlags(stderr io.Writer) (*pflag.FlagSet, *checkConfig) {
	fs := pflag.NewFlagSet("kubectl hairpin check", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &checkConfig{opts: kh.Options{Version: version}}
	fs.StringVarP(&c.output, "output", "o", "table", "output format: table or json")
	fs.StringVarP(&c.opts.TargetsNamespace, "namespace", "n", kh.DefaultTargetsNamespace, "the namespace of the target Services (the chart's release namespace)")
	fs.StringVar(&c.opts.CoreDNSNamespace, "coredns-namespace", kh.DefaultCoreDNSNamespace, "the namespace of CoreDNS's kube-dns Service")

	// The caller's kubeconfig, as kubectl reads it: --kubeconfig, else
	// $KUBECONFIG, else ~/.kube/config, and the usual overrides; kubectl
	// does not pass its own flags to a plugin. --namespace is ours.
	c.rules = clientcmd.NewDefaultClientConfigLoadingRules()
	fs.StringVar(&c.rules.ExplicitPath, "kubeconfig", "", "path to the kubeconfig file")
	c.overrides = &clientcmd.ConfigOverrides{}
	names := clientcmd.RecommendedConfigOverrideFlags("")
	names.ContextOverrideFlags.Namespace = clientcmd.FlagInfo{}
	names.ClusterOverrideFlags.APIServer.ShortName = "s"
	clientcmd.BindOverrideFlags(c.overrides, fs, names)
	// The rest of kubectl's: --cache-dir only serves kubectl's discovery
	// cache, which the check does not keep.
	fs.StringVar(&c.cacheDir, "cache-dir", "", "accepted as kubectl accepts it; the check keeps no cache")
	fs.StringArrayVar(&c.userExtra, "as-user-extra", nil, "user extras to impersonate, KEY=VALUE; may be repeated")
	return fs, c
}

// runCheck runs `kubectl hairpin check`.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs, c := checkFlags(stderr)
	output, rules, overrides := &c.output, c.rules, c.overrides
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: kubectl hairpin [connection flags] check [flags]\n\nReads the cluster (get and list only, and the pods' metrics through the\napiserver's pod proxy) and reports; exit 0: nothing failed, 1: a check\nfailed, 2: the cluster could not be read. The connection flags (--kubeconfig,\n--context, -n and the others below) go before or after \"check\".\n\nFlags:\n%s", fs.FlagUsages())
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
	for _, kv := range c.userExtra {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			fmt.Fprintf(stderr, "kubectl hairpin check: --as-user-extra %q: want KEY=VALUE\n", kv)
			return exitUnreadable
		}
		if overrides.AuthInfo.ImpersonateUserExtra == nil {
			overrides.AuthInfo.ImpersonateUserExtra = map[string][]string{}
		}
		overrides.AuthInfo.ImpersonateUserExtra[k] = append(overrides.AuthInfo.ImpersonateUserExtra[k], v)
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
	report, err := kh.Run(ctx, clients, c.opts)
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
