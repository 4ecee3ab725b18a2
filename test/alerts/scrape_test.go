package alerts

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/prometheus/prometheus/promql/promqltest"
	"go.yaml.in/yaml/v2"
)

// chartDir is the chart whose opt-in CoreDNS scrape (corednsMonitor) the
// test renders.
const chartDir = "../../manifests/coredns-hairpin"

// scrapeShape is how one scrape configuration labels CoreDNS's series: the
// labels its operator gives a target of the Service before the scrape's
// own relabelings, and those relabelings.
type scrapeShape struct {
	name        string
	discovered  labels.Labels
	relabelings []*relabel.Config
}

// target returns the labels CoreDNS's series carry in this shape: the
// relabelings applied, the discovery's meta labels gone.
func (s scrapeShape) target(t *testing.T) labels.Labels {
	t.Helper()
	lb := labels.NewBuilder(s.discovered)
	if !relabel.ProcessBuilder(lb, s.relabelings...) {
		t.Fatalf("%s: the relabelings drop the target", s.name)
	}
	out := lb.Labels()
	return labels.NewBuilder(out).Del(metaLabels(out)...).Labels()
}

func metaLabels(ls labels.Labels) []string {
	var names []string
	ls.Range(func(l labels.Label) {
		if strings.HasPrefix(l.Name, "__") {
			names = append(names, l.Name)
		}
	})
	return names
}

// discovered is what prometheus-operator and the VictoriaMetrics operator
// give a target of a ServiceMonitor (VMServiceScrape) endpoint before its
// relabelings: the Service's name as job, the Pod's address as instance,
// and its namespace, Service, Pod, container and endpoint.
func discovered(service, endpoint string) labels.Labels {
	return labels.FromStrings(
		"job", service, "instance", "10.244.0.5:9153",
		"namespace", "kube-system", "service", service, "pod", "coredns-7db6d8ff4d-x2xbk", "container", "coredns", "endpoint", endpoint,
		"__meta_kubernetes_pod_node_name", "cp1",
	)
}

// relabelings turns the relabelings of a ServiceMonitor or a
// VMServiceScrape endpoint (camelCase keys) into Prometheus's.
func relabelings(t *testing.T, list []any) []*relabel.Config {
	t.Helper()
	keys := map[string]string{"sourceLabels": "source_labels", "targetLabel": "target_label", "replacement": "replacement",
		"action": "action", "regex": "regex", "separator": "separator", "modulus": "modulus"}
	var cfgs []*relabel.Config
	for _, item := range list {
		m, ok := item.(map[any]any)
		if !ok {
			t.Fatalf("relabeling %v is not a map", item)
		}
		snake := map[string]any{}
		for k, v := range m {
			key, ok := keys[fmt.Sprint(k)]
			if !ok {
				t.Fatalf("relabeling key %v: not one this test translates", k)
			}
			snake[key] = v
		}
		b, err := yaml.Marshal(snake)
		if err != nil {
			t.Fatal(err)
		}
		var c relabel.Config
		if err := yaml.UnmarshalStrict(b, &c); err != nil {
			t.Fatalf("relabeling %s: %v", b, err)
		}
		if err := c.Validate(model.UTF8Validation); err != nil {
			t.Fatalf("relabeling %s: %v", b, err)
		}
		cfgs = append(cfgs, &c)
	}
	return cfgs
}

// scrapeObject returns the object of kind and name in the YAML stream y.
func scrapeObject(t *testing.T, y []byte, kind, name string) map[any]any {
	t.Helper()
	for _, doc := range strings.Split(string(y), "\n---") {
		var obj map[any]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		meta, _ := obj["metadata"].(map[any]any)
		if obj["kind"] == kind && meta["name"] == name {
			return obj
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return nil
}

// firstEndpoint returns the first endpoint of a scrape object's spec.
func firstEndpoint(t *testing.T, obj map[any]any) map[any]any {
	t.Helper()
	spec, _ := obj["spec"].(map[any]any)
	eps, _ := spec["endpoints"].([]any)
	if len(eps) == 0 {
		t.Fatalf("%v has no endpoints", obj["metadata"])
	}
	ep, _ := eps[0].(map[any]any)
	return ep
}

// cozystackShape is Cozystack's own scrape of CoreDNS in its management
// cluster (testdata/cozystack-coredns-scrape.yaml, cozystack/cozystack at
// 3c780acd417f086f8f18d040d0d7020ff55d3ba3,
// packages/system/monitoring-agents/templates/coredns-scrape.yaml).
func cozystackShape(t *testing.T) scrapeShape {
	t.Helper()
	y, err := os.ReadFile(filepath.Join("testdata", "cozystack-coredns-scrape.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ep := firstEndpoint(t, scrapeObject(t, y, "VMServiceScrape", "coredns-metrics"))
	list, _ := ep["relabelConfigs"].([]any)
	return scrapeShape{name: "Cozystack's monitoring-agents", discovered: discovered("coredns-metrics", fmt.Sprint(ep["port"])), relabelings: relabelings(t, list)}
}

// chartShape is the chart's opt-in scrape (corednsMonitor.enabled), as
// the real helm renders it (HAIRPIN_HELM).
func chartShape(t *testing.T) scrapeShape {
	t.Helper()
	helm := os.Getenv("HAIRPIN_HELM")
	if helm == "" {
		if os.Getenv("HAIRPIN_REQUIRE_E2E") == "1" {
			t.Fatal("HAIRPIN_HELM is not set (build/tools.sh --helm)")
		}
		t.Skip("HAIRPIN_HELM is not set (build/tools.sh --helm): the chart's scrape is not rendered")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm, "template", "hairpin", chartDir, "--namespace", "hairpin-system",
		"--set-json", `targets.ingress-nginx.zones=["example.com"]`, "--set", "corednsMonitor.enabled=true")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	ep := firstEndpoint(t, scrapeObject(t, stdout.Bytes(), "ServiceMonitor", "hairpin-coredns-metrics"))
	list, _ := ep["relabelings"].([]any)
	return scrapeShape{name: "the chart's corednsMonitor", discovered: discovered("hairpin-coredns-metrics", fmt.Sprint(ep["port"])), relabelings: relabelings(t, list)}
}

// TestPluginMissingFiresInEachScrapeShape (issue 44): HairpinPluginMissing
// fires for a CoreDNS without the plugin, and stays silent with it, in
// each shape the docs name for a CoreDNS scrape: Cozystack's own and the
// chart's opt-in one. The series carry the labels each shape's relabelings
// give them, so a scrape whose job the rule does not expect fails here.
func TestPluginMissingFiresInEachScrapeShape(t *testing.T) {
	rule, ok := loadRules(t)["HairpinPluginMissing"]
	if !ok {
		t.Fatal("HairpinPluginMissing is not in the rule file")
	}
	expr := strings.Join(strings.Fields(rule.Expr), " ")
	for _, shape := range []func(*testing.T) scrapeShape{cozystackShape, chartShape} {
		s := shape(t)
		target := s.target(t)
		with := func(name, value string) string {
			return labels.NewBuilder(target).Set(name, value).Labels().String()
		}
		plugin := func(name string) string {
			b := labels.NewBuilder(target)
			for _, kv := range [][2]string{{"server", "dns://:53"}, {"zone", "."}, {"view", ""}, {"name", name}} {
				b.Set(kv[0], kv[1])
			}
			return "coredns_plugin_enabled" + b.Labels().String() + " 1x15"
		}
		build := "coredns_build_info" + with("version", "1.15.0") + " 1x15"
		want := labels.FromStrings("job", target.Get("job"), "instance", target.Get("instance")).String() + " 1"
		t.Run(s.name+"/fires without the plugin", func(t *testing.T) {
			t.Logf("CoreDNS's series carry %s", target)
			promqltest.RunTest(t, script("  "+build+"\n  "+plugin("kubernetes"), expr, want),
				promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery))
		})
		t.Run(s.name+"/silent with it", func(t *testing.T) {
			promqltest.RunTest(t, script("  "+build+"\n  "+plugin("kubernetes")+"\n  "+plugin("hairpin"), expr, ""),
				promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery))
		})
	}
}
