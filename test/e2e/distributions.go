package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// Distributions are the Corefiles in testdata/corefiles, each as its
// distribution ships it (the file's header names origin and version).
var Distributions = []string{"kubeadm", "talos", "k3s", "helm", "cozystack-tenant"}

// CorefilesDir is testdata/corefiles of this package, wherever the caller
// runs (the benchmarks use the fixtures too).
var CorefilesDir = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "corefiles")
}()

// DistributionCorefile returns CorefilesDir/NAME.Corefile, verbatim.
func DistributionCorefile(name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(CorefilesDir, name+".Corefile"))
	if err != nil {
		return "", fmt.Errorf("distribution Corefile %s: %w", name, err)
	}
	return string(b), nil
}

// InClusterDomain renders a distribution's Corefile for the cluster domain
// domain, as the distribution renders it for a cluster created with that
// domain: the fixtures are rendered with cluster.local, and every
// occurrence of it outside a comment is the domain (Talos: the kubernetes
// plugin's zone and the cache's `disable success|denial`).
func InClusterDomain(corefile, domain string) (string, error) {
	lines := strings.SplitAfter(corefile, "\n")
	n := 0
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		n += strings.Count(l, defaultClusterDomain)
		lines[i] = strings.ReplaceAll(l, defaultClusterDomain, domain)
	}
	if n == 0 {
		return "", fmt.Errorf("distribution Corefile: no %s to render for the cluster domain %s", defaultClusterDomain, domain)
	}
	return strings.Join(lines, ""), nil
}

// defaultClusterDomain is the cluster domain the fixtures are rendered
// with.
const defaultClusterDomain = "cluster.local"

// LocalEnv is where a distribution's Corefile runs in the test instead of in
// a cluster.
type LocalEnv struct {
	// Listen, Health, Ready and Metrics are "127.0.0.1:port" addresses.
	Listen, Health, Ready, Metrics string
	// Kubeconfig is the control plane's admin kubeconfig.
	Kubeconfig string
	// Upstream ("ip:port") stands in for the node's /etc/resolv.conf.
	Upstream string
	// Dir stands in for /etc/coredns (k3s's NodeHosts and custom/ imports).
	Dir string
}

// substitution is one edit LocalCorefile makes; required edits must apply.
type substitution struct {
	what     string
	re       *regexp.Regexp
	repl     func(LocalEnv) string
	required bool
}

// substitutions are every difference between a distribution's Corefile and
// what the test runs, and nothing else. They only point the in-cluster bits
// at the test's loopback stand-ins; no directive is added or removed, except
// `bind` (to keep the server on loopback) and the kubernetes plugin's
// `kubeconfig` (we run outside a cluster):
//
//	.:53 {                           -> .:PORT { + a `bind 127.0.0.1` line after it
//	health / health {                -> health 127.0.0.1:PORT [{]
//	ready                            -> ready 127.0.0.1:PORT
//	prometheus :9153 / 0.0.0.0:9153  -> prometheus 127.0.0.1:PORT
//	kubernetes cluster.local … {     -> the same + a `kubeconfig PATH` line in it
//	forward . /etc/resolv.conf       -> forward . UPSTREAM (the public DNS stand-in)
//	/etc/coredns/                    -> DIR/ (k3s: NodeHosts, custom/*.override, custom/*.server)
//
// The hairpin directive that the image adds is not among them: it comes from
// the binary, from the kubernetes plugin's stanza as edited here (so it
// reads the same kubeconfig).
var substitutions = []substitution{
	{"the server block's address", regexp.MustCompile(`(?m)^\.:53 \{$`), func(e LocalEnv) string {
		host, port := splitHostPort(e.Listen)
		return ".:" + port + " {\n    bind " + host
	}, true},
	{"health", regexp.MustCompile(`(?m)^(\s+)health( \{)?$`), func(e LocalEnv) string { return "${1}health " + e.Health + "${2}" }, true},
	{"ready", regexp.MustCompile(`(?m)^(\s+)ready$`), func(e LocalEnv) string { return "${1}ready " + e.Ready }, true},
	{"prometheus", regexp.MustCompile(`(?m)^(\s+)prometheus \S*:9153$`), func(e LocalEnv) string { return "${1}prometheus " + e.Metrics }, true},
	{"kubernetes", regexp.MustCompile(`(?m)^(\s+)(kubernetes cluster\.local in-addr\.arpa ip6\.arpa \{)$`), func(e LocalEnv) string {
		return "${1}${2}\n${1}    kubeconfig " + e.Kubeconfig
	}, true},
	{"forward", regexp.MustCompile(`(?m)^(\s+)forward \. /etc/resolv\.conf`), func(e LocalEnv) string { return "${1}forward . " + e.Upstream }, true},
	{"/etc/coredns", regexp.MustCompile(`/etc/coredns/`), func(e LocalEnv) string { return e.Dir + "/" }, false},
}

// LocalCorefile applies the substitutions to a distribution's Corefile. A
// required substitution that finds nothing is an error, so that a changed
// fixture cannot silently run against the real /etc/resolv.conf or :53.
func LocalCorefile(corefile string, env LocalEnv) (string, error) {
	for _, s := range substitutions {
		n := len(s.re.FindAllStringIndex(corefile, -1))
		if s.required && n != 1 {
			return "", fmt.Errorf("local Corefile: %s: %d matches of %s, want 1", s.what, n, s.re)
		}
		corefile = s.re.ReplaceAllString(corefile, s.repl(env))
	}
	return corefile, nil
}

func splitHostPort(hostport string) (string, string) {
	i := strings.LastIndexByte(hostport, ':')
	return hostport[:i], hostport[i+1:]
}

// CreateDistributionTarget creates the target the distribution tests use:
// zones Zone, Ingress class nginx, port 80 to the proxy's port 8080.
func CreateDistributionTarget(ctx context.Context, cp *harness.ControlPlane, name string) (netip.Addr, error) {
	return CreateTarget(ctx, cp, name, 8080, map[string]string{ZonesAnnotation: Zone, IngressClassesAnnotation: "nginx"})
}

// DeleteTarget deletes the target Service name.
func DeleteTarget(ctx context.Context, cp *harness.ControlPlane, name string) error {
	if err := cp.Clientset.CoreV1().Services(ProxyNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete target %s/%s: %w", ProxyNamespace, name, err)
	}
	return nil
}
