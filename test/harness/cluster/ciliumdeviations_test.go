package cluster

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// ciliumChart is the chart that build/tools.sh takes from Cilium's module,
// and the helm to render it with; the test is skipped (or failed under
// HAIRPIN_REQUIRE_E2E=1) without them.
func ciliumChart(t *testing.T) (*harness.Helm, string) {
	t.Helper()
	chart := filepath.Join(harness.RequireAssets(t), "cilium", "share", "chart")
	if _, err := os.Stat(filepath.Join(chart, "Chart.yaml")); err != nil {
		harness.SkipOrFail(t, "cilium: %v; run `build/tools.sh cilium`", err)
	}
	return harness.RequireHelm(t), chart
}

// renders memoizes the chart's renderings for a shape by values, so that
// a check that renders many variants renders each once.
type renders struct {
	helm  *harness.Helm
	chart string
	shape *ciliumShape
	done  map[string]*ciliumInstall
}

func (r *renders) of(ctx context.Context, values CiliumValues) (*ciliumInstall, error) {
	key := fmt.Sprint(values.nest())
	if in, ok := r.done[key]; ok {
		return in, nil
	}
	in, err := renderCiliumChart(ctx, r.helm, r.chart, r.shape, values)
	if err != nil {
		return nil, err
	}
	r.done[key] = in
	return in, nil
}

// configDiff are the cilium-config keys that a and b render differently,
// a key that only one has included.
func configDiff(a, b *ciliumInstall) []string {
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(a.config.Data)) {
		if v, ok := b.config.Data[k]; !ok || v != a.config.Data[k] {
			keys = append(keys, k)
		}
	}
	for k := range b.config.Data {
		if _, ok := a.config.Data[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// deviationErrors holds the chart rendered with values to Cozystack's
// rendering and to the table rows: every cilium-config key that differs
// must be named by a row; every key a row names must change when the
// row's value is left to Cozystack's files; a chart value row that
// changes nothing (cilium-config, the DaemonSet, the Deployment) is stale.
func deviationErrors(ctx context.Context, r *renders, rows []Deviation, values CiliumValues) ([]string, error) {
	pure, err := r.of(ctx, nil)
	if err != nil {
		return nil, err
	}
	ours, err := r.of(ctx, values)
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, d := range rows {
		for _, k := range d.Config {
			named[k] = true
		}
	}
	var errs []string
	differs := configDiff(pure, ours)
	for _, k := range differs {
		if !named[k] {
			errs = append(errs, fmt.Sprintf("cilium-config %s: Cozystack's rendering has %q, ours %q, and no deviation names it", k, pure.config.Data[k], ours.config.Data[k]))
		}
	}
	for _, d := range rows {
		if !d.Value {
			continue
		}
		without := maps.Clone(values)
		delete(without, d.Path)
		alone, err := r.of(ctx, without)
		if err != nil {
			// The chart refuses Cozystack's value beside the other rows
			// (gatewayAPI needs l7Proxy): the row is needed, and its keys
			// must at least differ from Cozystack's rendering.
			for _, k := range d.Config {
				if !slices.Contains(differs, k) {
					errs = append(errs, fmt.Sprintf("the deviation %s names cilium-config %s, which ours renders as Cozystack's", d.Path, k))
				}
			}
			continue
		}
		changed := configDiff(alone, ours)
		if len(changed) == 0 && equality.Semantic.DeepEqual(alone.daemonSet, ours.daemonSet) && equality.Semantic.DeepEqual(alone.operator, ours.operator) {
			errs = append(errs, fmt.Sprintf("the deviation %s (Cozystack's %v, ours %v) is stale: it changes nothing Cozystack's files render", d.Path, d.Cozystack, d.Ours))
			continue
		}
		for _, k := range d.Config {
			if !slices.Contains(changed, k) {
				errs = append(errs, fmt.Sprintf("the deviation %s names cilium-config %s, which it does not change (it changes %v)", d.Path, k, changed))
			}
		}
	}
	return errs, nil
}

func TestCiliumConfigIsCozystacksButForTheDeviations(t *testing.T) {
	helm, chart := ciliumChart(t)
	for _, s := range ciliumShapes {
		t.Run(s.name, func(t *testing.T) {
			r := &renders{helm: helm, chart: chart, shape: s, done: map[string]*ciliumInstall{}}
			errs, err := deviationErrors(t.Context(), r, s.deviations, s.values())
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range errs {
				t.Error(e)
			}
		})
	}
}

// TestCiliumDeviationCheckFails: the check above fails on a key that
// differs with no row naming it, on a row that names a key it does not
// change, and on a row that changes nothing.
func TestCiliumDeviationCheckFails(t *testing.T) {
	helm, chart := ciliumChart(t)
	r := &renders{helm: helm, chart: chart, shape: ciliumModeShape, done: map[string]*ciliumInstall{}}
	hostOnly := Deviation{Path: "socketLB.hostNamespaceOnly", Cozystack: false, Ours: true, Value: true, Config: []string{"bpf-lb-sock-hostns-only"}}
	for _, tc := range []struct {
		name   string
		rows   []Deviation
		values CiliumValues
		want   string // in the one error
	}{
		{
			name:   "KeyNamedByNoRow",
			rows:   []Deviation{hostOnly},
			values: CiliumValues{"socketLB.hostNamespaceOnly": true, "bpf.lbMapMax": 131072},
			want:   `cilium-config bpf-lb-map-max: Cozystack's rendering has "65536", ours "131072", and no deviation names it`,
		},
		{
			name:   "RowNamesAKeyItDoesNotChange",
			rows:   []Deviation{{Path: hostOnly.Path, Cozystack: false, Ours: true, Value: true, Config: []string{"bpf-lb-sock-hostns-only", "enable-sctp"}}},
			values: CiliumValues{"socketLB.hostNamespaceOnly": true},
			want:   "the deviation socketLB.hostNamespaceOnly names cilium-config enable-sctp, which it does not change",
		},
		{
			name:   "StaleRow",
			rows:   []Deviation{hostOnly, {Path: "hubble.enabled", Cozystack: false, Ours: false, Value: true}},
			values: CiliumValues{"socketLB.hostNamespaceOnly": true, "hubble.enabled": false},
			want:   "the deviation hubble.enabled (Cozystack's false, ours false) is stale",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, err := deviationErrors(t.Context(), r, tc.rows, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			if len(errs) != 1 || !strings.Contains(errs[0], tc.want) {
				t.Errorf("errors %q; want one saying %q", errs, tc.want)
			}
		})
	}
}

// TestCiliumDeviationsStateCozystacksValues: the Cozystack column of a
// chart value row is what Cozystack's files set there, or else the
// chart's default.
func TestCiliumDeviationsStateCozystacksValues(t *testing.T) {
	_, chart := ciliumChart(t)
	b, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var defaults map[string]any
	if err := yaml.Unmarshal(b, &defaults); err != nil {
		t.Fatal(err)
	}
	for _, s := range ciliumShapes {
		for _, d := range s.deviations {
			if !d.Value {
				continue
			}
			v, ok, err := s.cozystackValue(d.Path)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				v, _ = lookup(defaults, d.Path)
			}
			if fmt.Sprint(v) != fmt.Sprint(d.Cozystack) {
				t.Errorf("%s: the deviation %s says Cozystack has %v; its files and the chart give %v", s.name, d.Path, d.Cozystack, v)
			}
			if fmt.Sprint(v) == fmt.Sprint(d.Ours) {
				t.Errorf("%s: the deviation %s has Cozystack's value %v as ours", s.name, d.Path, v)
			}
		}
	}
}

// TestCiliumCapabilitiesFollowTheRenderedConfig: what the dataplane says
// it does is what the cilium-config it renders tells the agent.
func TestCiliumCapabilitiesFollowTheRenderedConfig(t *testing.T) {
	helm, chart := ciliumChart(t)
	for _, tc := range []struct {
		name   string
		values CiliumValues
		dp     Dataplane // default: Cilium(values)
	}{
		{"Default", DefaultCiliumValues(), nil},
		{CozyTenant, cozyTenantShape.values(), cozyTenant()},
		{"SocketLBInTheNodeOnly", with(DefaultCiliumValues(), "socketLB.hostNamespaceOnly", true), nil},
		// Masquerading in native routing needs ipv4NativeRoutingCIDR; a
		// tenant's Cilium tunnels.
		{"Masquerade", with(with(DefaultCiliumValues(), "enableIPv4Masquerade", true), "routingMode", "tunnel"), nil},
		{"NoSocketLB", with(with(DefaultCiliumValues(), "kubeProxyReplacement", false), "socketLB.enabled", false), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dp == nil {
				tc.dp = Cilium(tc.values)
			}
			d := tc.dp.(ciliumDataplane)
			in, err := renderCiliumChart(t.Context(), helm, chart, d.shape, d.values)
			if err != nil {
				t.Fatal(err)
			}
			cfg := in.config.Data
			caps := tc.dp.Capabilities()
			// An agent with kube-proxy replacement balances at the socket
			// whatever bpf-lb-sock says (cilium pkg/kpr, v1.19.5).
			sock := cfg["kube-proxy-replacement"] == "true" || cfg["bpf-lb-sock"] == "true"
			inPods := sock && cfg["bpf-lb-sock-hostns-only"] != "true"
			masq := cfg["enable-ipv4-masquerade"] != "false"
			if caps.SocketLBInNode != sock || caps.SocketLBInPods != inPods || caps.MasqueradesPods != masq {
				t.Errorf("capabilities: socket LB in the node %v, in Pods %v, masquerade %v; cilium-config says %v, %v, %v (%v)",
					caps.SocketLBInNode, caps.SocketLBInPods, caps.MasqueradesPods, sock, inPods, masq, cfg)
			}
		})
	}
}

// with is values with path set to v.
func with(values CiliumValues, path string, v any) CiliumValues {
	values[path] = v
	return values
}
