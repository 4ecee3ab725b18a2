package manifests

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// localPorts are the loopback ports a Corefile under test is moved to.
type localPorts struct {
	dns, health, ready, metrics int
	upstream                    string // "127.0.0.1:port" of the forward upstream
}

// corefileEdit is one rewrite that makes an in-cluster Corefile runnable on
// loopback, out of cluster.
type corefileEdit struct {
	what     string
	optional bool // applies only when it matches
	re       *regexp.Regexp
	repl     func(p localPorts, kubeconfig string) string
}

var corefileEdits = []corefileEdit{
	{"server block on :53", false, regexp.MustCompile(`(?m)^(\S*):53(\s*\{)[ \t]*$`),
		func(p localPorts, _ string) string { return fmt.Sprintf("${1}:%d${2}\n    bind 127.0.0.1", p.dns) }},
	{"health", false, regexp.MustCompile(`(?m)^(\s*)health(?:[ \t]+\S*:\d+)?([ \t]*\{)?[ \t]*$`),
		func(p localPorts, _ string) string { return fmt.Sprintf("${1}health 127.0.0.1:%d${2}", p.health) }},
	{"ready", false, regexp.MustCompile(`(?m)^(\s*)ready(?:[ \t]+\S*:\d+)?[ \t]*$`),
		func(p localPorts, _ string) string { return fmt.Sprintf("${1}ready 127.0.0.1:%d", p.ready) }},
	{"prometheus", false, regexp.MustCompile(`(?m)^(\s*)prometheus(?:[ \t]+\S*:\d+)?[ \t]*$`),
		func(p localPorts, _ string) string { return fmt.Sprintf("${1}prometheus 127.0.0.1:%d", p.metrics) }},
	// Nothing leaves the machine: the upstream is a loopback address.
	{"forward to resolv.conf", false, regexp.MustCompile(`(?m)^(\s*forward\s+\S+\s+)/etc/resolv\.conf`),
		func(p localPorts, _ string) string { return "${1}" + p.upstream }},
	// A stanza without a block gets an empty one, for the edits below.
	{"kubernetes without a block", true, regexp.MustCompile(`(?m)^(\s*)(kubernetes\b(?:[^{}\n]|\{\$[^}\n]*\})*?)[ \t]*$`),
		func(localPorts, string) string { return "${1}${2} {\n${1}}" }},
	{"hairpin without a block", true, regexp.MustCompile(`(?m)^(\s*)(hairpin\b(?:[^{}\n]|\{\$[^}\n]*\})*?)[ \t]*$`),
		func(localPorts, string) string { return "${1}${2} {\n${1}}" }},
	{"kubernetes stanza", false, regexp.MustCompile(`(?m)^(\s*)(kubernetes\b(?:[^{}\n]|\{\$[^}\n]*\})*\{)[ \t]*$`),
		func(_ localPorts, kc string) string { return "${1}${2}\n${1}    kubeconfig " + kc }},
	{"hairpin stanza", false, regexp.MustCompile(`(?m)^(\s*)(hairpin\b(?:[^{}\n]|\{\$[^}\n]*\})*\{)[ \t]*$`),
		func(_ localPorts, kc string) string {
			return "${1}${2}\n${1}    kubeconfig " + kc + "\n${1}    startup_timeout 2s"
		}},
}

// localCorefile rewrites an in-cluster Corefile to run on loopback with
// kubeconfig: the server block on p.dns bound to 127.0.0.1; health, ready
// and prometheus on loopback ports; forward to a dead loopback port; and
// `kubeconfig` in the kubernetes and hairpin stanzas. Every edit must apply,
// so that a Corefile that drifts from what the test understands fails
// loudly instead of binding :53.
func localCorefile(corefile string, p localPorts, kubeconfig string) (string, error) {
	for _, e := range corefileEdits {
		if !e.re.MatchString(corefile) {
			if e.optional {
				continue
			}
			return "", fmt.Errorf("Corefile has no %s to rewrite:\n%s", e.what, corefile)
		}
		corefile = e.re.ReplaceAllString(corefile, e.repl(p, kubeconfig))
	}
	return corefile, nil
}

// dnsExpectation is one query a served Corefile must answer.
type dnsExpectation struct {
	name  string
	rcode int
	a     string // the single A record wanted, "" for none
}

// coreDNS is a running bin/coredns on a rewritten Corefile.
type coreDNS struct {
	proc *harness.Process
	addr string // DNS "127.0.0.1:port"
}

// serveCorefile starts bin/coredns on the local rewrite of corefile with
// the environment env (e.g. CLUSTER_DOMAIN for {$CLUSTER_DOMAIN}), its
// forward upstream at upstream ("127.0.0.1:port"; "" for a loopback port
// where nobody listens), and
// waits until it answers DNS and its ready plugin reports every plugin
// ready (kubernetes and hairpin have synced, which needs their RBAC). It
// returns an error, not a test failure, so that callers can also assert
// that a bad Corefile or missing RBAC is caught.
func serveCorefile(t *testing.T, corefile string, env []string, kubeconfig, upstream string, timeout time.Duration) (*coreDNS, error) {
	t.Helper()
	bin := harness.RequireBinary(t, "coredns")
	if upstream == "" {
		upstream = harness.FreeAddr(t, "127.0.0.1")
	}
	p := localPorts{
		dns:      harness.FreePort(t, "127.0.0.1"),
		health:   harness.FreePort(t, "127.0.0.1"),
		ready:    harness.FreePort(t, "127.0.0.1"),
		metrics:  harness.FreePort(t, "127.0.0.1"),
		upstream: upstream,
	}
	local, err := localCorefile(corefile, p, kubeconfig)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(local), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-conf", path)
	cmd.Env = append(os.Environ(), env...)
	proc := harness.StartCmd(t, "coredns", cmd)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p.dns))
	if err := proc.Ready(ctx, harness.DNSProbe(addr, ".", dns.TypeNS)); err != nil {
		proc.Stop()
		return nil, fmt.Errorf("coredns does not answer DNS on %s: %w\nCorefile:\n%s\noutput:\n%s", addr, err, local, proc.Output())
	}
	ready := fmt.Sprintf("http://127.0.0.1:%d/ready", p.ready)
	if err := proc.Ready(ctx, harness.HTTPProbe(ready)); err != nil {
		proc.Stop()
		return nil, fmt.Errorf("coredns never became ready: %w\noutput:\n%s", err, proc.Output())
	}
	return &coreDNS{proc: proc, addr: addr}, nil
}

// expect checks one query against c.
func (c *coreDNS) expect(t *testing.T, want dnsExpectation) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := harness.Exchange(ctx, c.addr, want.name, dns.TypeA)
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	got := strings.Join(aRecords(r), ",")
	if want.a != "" && (r.Rcode != want.rcode || got != want.a) {
		t.Errorf("A %s: %s %q; want %s %q", want.name, dns.RcodeToString[r.Rcode], got, dns.RcodeToString[want.rcode], want.a)
	}
	if want.a == "" && got != "" {
		t.Errorf("A %s: answered %q; want no hairpin answer (rcode %s)", want.name, got, dns.RcodeToString[r.Rcode])
	}
}

// aRecords is harness.ARecords as strings, the form of this package's
// expectations.
func aRecords(r *dns.Msg) []string {
	var as []string
	for _, a := range harness.ARecords(r) {
		as = append(as, a.String())
	}
	return as
}

// TestLocalCorefileRewritesEveryListener is a table test of the rewrite,
// without a control plane.
func TestLocalCorefileRewritesEveryListener(t *testing.T) {
	p := localPorts{dns: 1053, health: 1080, ready: 1081, metrics: 1090, upstream: "127.0.0.1:1099"}
	stock := kubeadmCorefile
	tests := []struct {
		name     string
		corefile string
		want     []string // substrings of the result
		wantErr  string
	}{
		{name: "stock Corefile is moved to loopback", corefile: stock, want: []string{
			".:1053 {\n    bind 127.0.0.1\n", "health 127.0.0.1:1080 {", "ready 127.0.0.1:1081\n",
			"prometheus 127.0.0.1:1090\n", "forward . 127.0.0.1:1099 {",
			"ip6.arpa {\n        kubeconfig /kc\n", "hairpin {\n        kubeconfig /kc\n        startup_timeout 2s\n        targets hairpin-system\n",
		}},
		{name: "stanzas without a block get one", corefile: strings.NewReplacer(
			"hairpin {\n        targets hairpin-system\n    }", "hairpin example.com",
			"ip6.arpa {\n        pods insecure\n        fallthrough in-addr.arpa ip6.arpa\n        ttl 30\n    }", "ip6.arpa").Replace(stock), want: []string{
			"ip6.arpa {\n        kubeconfig /kc\n    }\n", "hairpin example.com {\n        kubeconfig /kc\n        startup_timeout 2s\n    }\n",
		}},
		{name: "environment placeholders stay", corefile: strings.Replace(stock, "kubernetes cluster.local", "kubernetes {$CLUSTER_DOMAIN}", 1), want: []string{
			"kubernetes {$CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {\n        kubeconfig /kc\n",
		}},
		{name: "Corefile without hairpin is refused", corefile: strings.Replace(stock, "    hairpin {\n        targets hairpin-system\n    }\n", "", 1), wantErr: "no hairpin stanza"},
		{name: "server block not on 53 is refused", corefile: strings.Replace(stock, ".:53", ".:5353", 1), wantErr: "no server block on :53"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := localCorefile(tt.corefile, p, "/kc")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v; want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("rewrite lacks %q:\n%s", w, got)
				}
			}
			if strings.Contains(got, ":53 ") || strings.Contains(got, ":9153") || strings.Contains(got, "resolv.conf") {
				t.Errorf("rewrite keeps an in-cluster listener or upstream:\n%s", got)
			}
		})
	}
}
