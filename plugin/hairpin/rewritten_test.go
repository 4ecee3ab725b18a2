package hairpin

import (
	"fmt"
	"testing"

	"github.com/coredns/caddy"
	_ "github.com/coredns/coredns/plugin/rewrite" // the rules that run before hairpin

	"github.com/prometheus/client_golang/prometheus"
)

// rewrittenGauge reads rules.MetricHostsRewritten of the block on port as
// a scrape would; ok is false when the block has no series.
func rewrittenGauge(t *testing.T, port int) (v float64, ok bool) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(rewritten)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	server := fmt.Sprintf("dns://127.0.0.1:%d", port)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["server"] == server {
				if labels["zone"] != "example.com." {
					t.Errorf("zone label %q, want example.com.", labels["zone"])
				}
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// withRewrite is a server block with lines before hairpin (the directive
// order puts rewrite first, as plugin.cfg does).
func withRewrite(port int, lines string) caddy.Input {
	return caddy.CaddyfileInput{ServerTypeName: "dns", Contents: []byte(fmt.Sprintf(`
example.com:%d {
    bind 127.0.0.1
    %s
    hairpin {
        startup_timeout 5s
    }
}`, port, lines))}
}

func TestRewrittenHostsCountWhatTheLoadedRulesRename(t *testing.T) {
	useFakeClients(t, targetService("ingress-nginx", "127.77.0.10", "example.com", "nginx"),
		ingress("default", "app", "nginx", "app.example.com", "shop.example.com"),
		ingress("default", "wild", "nginx", "*.wild.example.com"))
	cases := []struct {
		name  string
		lines string
		want  float64
	}{
		{name: "NoRewrite", want: 0},
		// ouroboros's rendering: one exact rule per host, target with its dot.
		{name: "OuroborosExactRule", lines: "rewrite name app.example.com ouroboros-proxy.cozy-ouroboros.svc.cluster.local.", want: 1},
		{name: "ExplicitExactWithAnswerAuto", lines: "rewrite stop name exact shop.example.com proxy.ns.svc.cluster.local. answer auto", want: 1},
		{name: "SuffixCoversEveryHostAndTheWildcard", lines: "rewrite name suffix .example.com .example.net", want: 3},
		{name: "RegexCoversTheWildcard", lines: `rewrite name regex (.*)\.wild\.example\.com {1}.other.org answer auto`, want: 1},
		{name: "ContinueRulesApplyInOrder", lines: "rewrite continue name prefix app. www.\n    rewrite name exact www.example.com app.example.com", want: 0},
		{name: "TypeRuleRenamesNothing", lines: "rewrite stop type A AAAA", want: 0},
		{name: "RuleForAnotherName", lines: "rewrite name exact other.example.com x.example.net.", want: 0},
		{name: "BlockForm", lines: "rewrite stop {\n        name exact app.example.com proxy.ns.svc.cluster.local.\n        answer name proxy.ns.svc.cluster.local. app.example.com\n    }", want: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			port := freeLoopbackPort(t)
			inst, err := caddy.Start(withRewrite(port, tc.lines))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				inst.Stop()
				for _, err := range inst.ShutdownCallbacks() {
					t.Error(err)
				}
				if _, ok := rewrittenGauge(t, port); ok {
					t.Error("the stopped block still has a series")
				}
			}()
			if got, ok := rewrittenGauge(t, port); !ok || got != tc.want {
				t.Errorf("%s gauge %v (present %v), want %v", "hosts_rewritten", got, ok, tc.want)
			}
		})
	}
}

// A reload that takes the rule out is what the check waits for, per
// replica: the new instance's count replaces the old one's.
func TestReloadWithoutTheRuleCountsNoRewrittenHost(t *testing.T) {
	useFakeClients(t, targetService("ingress-nginx", "127.77.0.10", "example.com", "nginx"), ingress("default", "app", "nginx", "app.example.com"))
	port := freeLoopbackPort(t)
	inst, err := caddy.Start(withRewrite(port, "rewrite name app.example.com ouroboros-proxy.cozy-ouroboros.svc.cluster.local."))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := rewrittenGauge(t, port); got != 1 {
		t.Fatalf("before the reload: %v rewritten hosts, want 1", got)
	}
	if inst, err = inst.Restart(withRewrite(port, "")); err != nil {
		t.Fatal(err)
	}
	if got, ok := rewrittenGauge(t, port); !ok || got != 0 {
		t.Errorf("after the reload: %v rewritten hosts (present %v), want 0", got, ok)
	}
	inst.Stop()
	for _, err := range inst.ShutdownCallbacks() {
		t.Error(err)
	}
}
