// Package alerts holds the tests of docs/alerts/hairpin.rules.yaml.
package alerts

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
)

const ruleFile = "../../docs/alerts/hairpin.rules.yaml"

// wantAlerts are the alerts the issue asks for, one per failure.
var wantAlerts = []string{
	"HairpinNotSynced",
	"HairpinPluginMissing",
	"HairpinProxyUpstreamDown",
	"HairpinTargetWithoutAddresses",
	"HairpinWatchErrors",
}

// loadRules parses the rule file with Prometheus's own parser and
// validation (unknown fields are errors) and returns the alerts by name.
func loadRules(t *testing.T) map[string]rulefmt.Rule {
	t.Helper()
	p := parser.NewParser(parser.Options{})
	groups, errs := rulefmt.ParseFile(ruleFile, false, model.UTF8Validation, p, promslog.NewNopLogger())
	for _, err := range errs {
		t.Errorf("rule file: %v", err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	rules := map[string]rulefmt.Rule{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: a recording rule %q; the file holds alerts only", g.Name, r.Record)
				continue
			}
			if _, dup := rules[r.Alert]; dup {
				t.Errorf("alert %s is defined twice", r.Alert)
			}
			rules[r.Alert] = r
		}
	}
	return rules
}

func TestRuleFileParses(t *testing.T) {
	rules := loadRules(t)
	if got := slices.Sorted(maps.Keys(rules)); !slices.Equal(got, wantAlerts) {
		t.Fatalf("alerts %v, want %v", got, wantAlerts)
	}
	for name, r := range rules {
		if r.For <= 0 {
			t.Errorf("%s: no `for`: a single bad scrape would page", name)
		}
		if r.Labels["severity"] == "" {
			t.Errorf("%s: no severity label", name)
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s: no %s annotation", name, a)
			}
		}
	}
}

// TestAlertsFireOnlyWhenTheyShould evaluates each alert's expression with
// Prometheus's PromQL engine on series shaped like what the plugin and the
// proxy export: the failure must give exactly the expected alerts, the
// healthy state none.
func TestAlertsFireOnlyWhenTheyShould(t *testing.T) {
	rules := loadRules(t)
	for _, tc := range []struct {
		alert   string
		failing string // series in promqltest's load syntax, 1m apart
		want    string // expected result lines at 10m
		healthy string
	}{
		{
			alert: "HairpinPluginMissing",
			failing: `
  coredns_build_info{job="coredns", instance="10.0.0.1:9153", version="1.15.0"} 1x15
  coredns_build_info{job="coredns", instance="10.0.0.2:9153", version="1.15.0"} 1x15
  coredns_build_info{job="node-local-dns", instance="10.0.1.1:9253", version="1.15.0"} 1x15
  coredns_plugin_enabled{job="coredns", instance="10.0.0.1:9153", server="dns://:53", zone=".", view="", name="kubernetes"} 1x15
  coredns_plugin_enabled{job="coredns", instance="10.0.0.2:9153", server="dns://:53", zone=".", view="", name="hairpin"} 1x15`,
			want: `{job="coredns", instance="10.0.0.1:9153"} 1`,
			healthy: `
  coredns_build_info{job="coredns", instance="10.0.0.1:9153", version="1.15.0"} 1x15
  coredns_build_info{job="node-local-dns", instance="10.0.1.1:9253", version="1.15.0"} 1x15
  coredns_plugin_enabled{job="coredns", instance="10.0.0.1:9153", server="dns://:53", zone=".", view="", name="hairpin"} 1x15`,
		},
		{
			alert: "HairpinNotSynced",
			failing: `
  coredns_hairpin_kind_synced{job="coredns", instance="10.0.0.1:9153", cache="5f2c", kind="ingress"} 1x15
  coredns_hairpin_kind_synced{job="coredns", instance="10.0.0.1:9153", cache="5f2c", kind="httproute"} 0x15`,
			want: `coredns_hairpin_kind_synced{job="coredns", instance="10.0.0.1:9153", cache="5f2c", kind="httproute"} 0`,
			healthy: `
  coredns_hairpin_kind_synced{job="coredns", instance="10.0.0.1:9153", cache="5f2c", kind="ingress"} 0 0 1x13`,
		},
		{
			alert: "HairpinTargetWithoutAddresses",
			failing: `
  coredns_hairpin_target_addresses{job="coredns", instance="10.0.0.1:9153", cache="5f2c", target="hairpin-system/ingress-nginx", family="ipv4"} 0x15
  coredns_hairpin_target_addresses{job="coredns", instance="10.0.0.1:9153", cache="5f2c", target="hairpin-system/ingress-nginx", family="ipv6"} 0x15
  coredns_hairpin_target_addresses{job="coredns", instance="10.0.0.1:9153", cache="5f2c", target="hairpin-system/envoy", family="ipv4"} 0x15
  coredns_hairpin_target_addresses{job="coredns", instance="10.0.0.1:9153", cache="5f2c", target="hairpin-system/envoy", family="ipv6"} 1x15`,
			want: `{target="hairpin-system/ingress-nginx"} 0`,
			healthy: `
  coredns_hairpin_target_addresses{job="coredns", instance="10.0.0.1:9153", cache="5f2c", target="hairpin-system/ingress-nginx", family="ipv4"} 1x15
  coredns_hairpin_target_addresses{job="coredns", instance="10.0.0.1:9153", cache="5f2c", target="hairpin-system/ingress-nginx", family="ipv6"} 0x15`,
		},
		{
			alert: "HairpinProxyUpstreamDown",
			failing: `
  hairpin_proxy_upstream_up{job="hairpin-proxy", instance="10.0.2.1:9090", route="ingress-nginx-http"} 0x15
  hairpin_proxy_upstream_up{job="hairpin-proxy", instance="10.0.2.1:9090", route="ingress-nginx-https"} 1x15`,
			want: `hairpin_proxy_upstream_up{job="hairpin-proxy", instance="10.0.2.1:9090", route="ingress-nginx-http"} 0`,
			healthy: `
  hairpin_proxy_upstream_up{job="hairpin-proxy", instance="10.0.2.1:9090", route="ingress-nginx-http"} 1x15`,
		},
		{
			alert: "HairpinWatchErrors",
			failing: `
  coredns_hairpin_watch_errors_total{job="coredns", instance="10.0.0.1:9153", cache="5f2c", kind="ingress", reason="forbidden"} 0+1x15
  coredns_hairpin_watch_errors_total{job="coredns", instance="10.0.0.1:9153", cache="5f2c", kind="gateway", reason="forbidden"} 3x15`,
			want: `{job="coredns", instance="10.0.0.1:9153", kind="ingress", reason="forbidden"} 0.016666666666666666`,
			healthy: `
  coredns_hairpin_watch_errors_total{job="coredns", instance="10.0.0.1:9153", cache="5f2c", kind="ingress", reason="forbidden"} 0+1x2 2x13`,
		},
	} {
		r, ok := rules[tc.alert]
		if !ok {
			t.Errorf("%s: not in the rule file", tc.alert)
			continue
		}
		expr := strings.Join(strings.Fields(r.Expr), " ")
		t.Run(tc.alert+"/fires", func(t *testing.T) {
			promqltest.RunTest(t, script(tc.failing, expr, tc.want), promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery))
		})
		t.Run(tc.alert+"/silent", func(t *testing.T) {
			promqltest.RunTest(t, script(tc.healthy, expr, ""), promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery))
		})
	}
}

// script is a promqltest script: the series, and the expression evaluated
// at 10m with the expected result (none when want is empty).
func script(series, expr, want string) string {
	s := fmt.Sprintf("load 1m\n%s\n\neval instant at 10m %s\n", strings.TrimLeft(series, "\n"), expr)
	if want != "" {
		s += "  " + want + "\n"
	}
	return s
}
