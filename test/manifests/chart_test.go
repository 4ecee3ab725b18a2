package manifests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// TestHelmLint runs `helm lint --strict` with every values case.
func TestHelmLint(t *testing.T) {
	h := harness.RequireHelm(t)
	for _, c := range valuesCases(t) {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"lint", "--strict", chartDir(t), "--namespace", releaseNamespace}, c.args()...)
			if out, err := h.Run(t.Context(), args...); err != nil {
				t.Errorf("%v\n%s", err, out)
			}
		})
	}
}

// TestDefaultValuesRequireZones checks the decision documented in
// values.yaml: the default target ships without zones, so installing the
// chart without naming them fails, and the message names the field; naming
// them is one --set-json, which merges into the default target.
func TestDefaultValuesRequireZones(t *testing.T) {
	h := harness.RequireHelm(t)
	for _, cmd := range [][]string{
		{"template", releaseName, chartDir(t)},
		{"lint", chartDir(t)},
	} {
		t.Run(cmd[0], func(t *testing.T) {
			out, err := h.Run(t.Context(), cmd...)
			if err == nil {
				t.Fatalf("helm %s with the default values succeeded; want a failure naming the zones\n%s", cmd[0], out)
			}
			// helm lint prints its findings on stdout.
			if msg := out + err.Error(); !strings.Contains(msg, "at '/targets/ingress-nginx/zones': minItems: got 0, want 1") {
				t.Errorf("error does not name /targets/ingress-nginx/zones:\n%s", msg)
			}
		})
	}
	if _, err := h.Run(t.Context(), "template", releaseName, chartDir(t), "--set-json", defaultZones); err != nil {
		t.Errorf("the default target with zones does not render: %v", err)
	}
}

// TestBadValuesNameTheField renders the chart with one bad value at a time
// and checks that helm refuses, with a message naming the field (a JSON
// pointer from the schema, or targets[i]... from the chart's own checks).
func TestBadValuesNameTheField(t *testing.T) {
	h := harness.RequireHelm(t)
	// a and b are two complete targets; b's ports are given.
	const a = `"a":{"zones":["example.com"],"ingressClasses":["nginx"],` +
		`"upstream":{"namespace":"ingress-nginx","name":"c","ports":[{"name":"http","port":80,"containerPort":8080}]}}`
	b := func(ports string) string {
		return `"b":{"zones":["example.org"],"ingressClasses":["b"],"upstream":{"namespace":"b","name":"c","ports":[` + ports + `]}}`
	}
	targets := func(entries ...string) string {
		return `targets={"ingress-nginx":{"enabled":false},` + strings.Join(entries, ",") + `}`
	}
	tests := []struct {
		name string
		set  []string
		want string
	}{
		{"unknown top-level key", []string{defaultZones, `proxi={}`}, "proxi"},
		{"typo in a target", []string{targets(`"a":{"zone":["example.com"],"upstream":{"namespace":"n","name":"c","ports":[{"name":"http","port":80,"containerPort":8080}]}}`)}, "/targets/a"},
		{"default target without zones", []string{`targets.ingress-nginx.zones=[]`}, "/targets/ingress-nginx/zones"},
		{"zone with a wildcard", []string{`targets.ingress-nginx.zones=["*.example.com"]`}, `targets.ingress-nginx.zones[0]: "*.example.com" is not a DNS zone: lower-case labels of letters, digits and '-' separated by dots, such as example.com`},
		{"target name not a DNS label", []string{targets(a, `"Bad_Name":{"zones":["x.org"],"ingressClasses":["x"],"upstream":{"namespace":"n","name":"c","ports":[{"name":"http","port":80,"containerPort":8081}]}}`)}, `targets: "Bad_Name" is not a valid target name: it names the target's Service, so at most 63 lower-case letters, digits and '-', starting with a letter and ending with a letter or digit`},
		{"grace period not above lameduck and drain", []string{defaultZones, `proxy.terminationGracePeriodSeconds=30`}, "proxy.terminationGracePeriodSeconds: 30 must exceed proxy.lameduck + proxy.drainTimeout (5s + 25s = 30s)"},
		{"grace period below a longer drain", []string{defaultZones, `proxy.drainTimeout="1m30s"`}, "proxy.terminationGracePeriodSeconds: 35 must exceed proxy.lameduck + proxy.drainTimeout (5s + 1m30s = 95s)"},
		{"privileged container port", []string{defaultZones, `targets.ingress-nginx.upstream.ports=[{"name":"http","port":80,"containerPort":80}]`}, "/targets/ingress-nginx/upstream/ports/0/containerPort"},
		{"port out of range", []string{defaultZones, `targets.ingress-nginx.upstream.ports=[{"name":"http","port":70000,"containerPort":8080}]`}, "/targets/ingress-nginx/upstream/ports/0/port"},
		{"gateway without namespace", []string{defaultZones, `targets.ingress-nginx.gateways=["public"]`}, "/targets/ingress-nginx/gateways/0"},
		{"proxy protocol 3", []string{defaultZones, `proxy.proxyProtocol=3`}, "/proxy/proxyProtocol"},
		{"bad duration", []string{defaultZones, `proxy.dialTimeout="5 seconds"`}, "/proxy/dialTimeout"},
		{"bad log level", []string{defaultZones, `proxy.logLevel="verbose"`}, "/proxy/logLevel"},
		{"bad gatewayAPI switch", []string{defaultZones, `rbac.gatewayAPI="yes"`}, "/rbac/gatewayAPI"},
		{"bad digest", []string{defaultZones, `proxy.image.digest="latest"`}, "/proxy/image/digest"},
		{"bad dest addr", []string{defaultZones, `targets.ingress-nginx.destAddr="lb.example.com"`}, "/targets/ingress-nginx/destAddr"},
		{"duplicate container port across targets", []string{targets(a, b(`{"name":"http","port":80,"containerPort":8080}`))}, "targets.b.upstream.ports[0].containerPort: 8080 is already used by targets.a.upstream.ports[0]"},
		{"container port is the health port", []string{targets(a, b(`{"name":"http","port":80,"containerPort":9090}`))}, "targets.b.upstream.ports[0].containerPort: 9090 is already used by proxy.healthPort"},
		{"duplicate port name", []string{targets(a, b(`{"name":"http","port":80,"containerPort":8081},{"name":"http","port":443,"containerPort":8443}`))}, `targets.b.upstream.ports[1].name: "http" is already the name of targets.b.upstream.ports[0]`},
		{"duplicate service port", []string{targets(a, b(`{"name":"http","port":80,"containerPort":8081},{"name":"alt","port":80,"containerPort":8443}`))}, "targets.b.upstream.ports[1].port: 80 is already the port of targets.b.upstream.ports[0]"},
		{"route names collide", []string{targets(
			`"a":{"zones":["x.org"],"ingressClasses":["x"],"upstream":{"namespace":"n","name":"c","ports":[{"name":"b-c","port":80,"containerPort":8081}]}}`,
			`"a-b":{"zones":["y.org"],"ingressClasses":["y"],"upstream":{"namespace":"n","name":"c","ports":[{"name":"c","port":80,"containerPort":8082}]}}`)},
			`targets.a-b.upstream.ports[0].name: route name "a-b-c" is already the route of targets.a.upstream.ports[0]`},
		{"target selects nothing", []string{defaultZones, `targets.ingress-nginx.ingressClasses=[]`}, "targets.ingress-nginx: selects nothing"},
		{"gateways without Gateway API RBAC", []string{defaultZones, `targets.ingress-nginx.gatewayClasses=["eg"]`, `rbac.gatewayAPI=false`}, "targets.ingress-nginx: selects Gateways (gatewayClasses/gateways) but rbac.gatewayAPI is false"},
		{"target named like the metrics Service", []string{targets(`"hairpin-proxy-metrics":{"zones":["x.org"],"ingressClasses":["x"],"upstream":{"namespace":"n","name":"c","ports":[{"name":"http","port":80,"containerPort":8081}]}}`)}, `targets.hairpin-proxy-metrics: "hairpin-proxy-metrics" is the name of the proxy's metrics Service`},
		{"direct target with the default upstream", []string{defaultZones, `targets.ingress-nginx.direct={"namespace":"gateways","name":"public"}`}, "/targets/ingress-nginx/upstream"},
		{"direct target with destAddr", []string{targets(`"d":{"zones":["x.org"],"gateways":["g/p"],"destAddr":"203.0.113.1","direct":{"namespace":"g","name":"s"}}`)}, "/targets/d/destAddr"},
		{"direct target without a name", []string{targets(`"d":{"zones":["x.org"],"gateways":["g/p"],"direct":{"namespace":"g"}}`)}, "/targets/d/direct"},
		{"direct target without zones", []string{targets(`"d":{"gateways":["g/p"],"direct":{"namespace":"g","name":"s"}}`)}, "/targets/d"},
		{"target with neither upstream nor direct", []string{targets(`"d":{"zones":["x.org"],"gateways":["g/p"]}`)}, "upstream"},
		{"tenant without DNS Service IP", []string{defaultZones, `tenant.enabled=true`, `tenant.dnsServiceIP=""`}, "tenant.dnsServiceIP"},
		{"CoreDNS scrape interval", []string{defaultZones, `corednsMonitor.interval="30 seconds"`}, "/corednsMonitor/interval"},
		{"CoreDNS scrape without its pods", []string{defaultZones, `corednsMonitor.enabled=true`, `corednsMonitor.podSelector=null`}, "corednsMonitor.podSelector: the labels of the CoreDNS pods"},
		{"CoreDNS scraped twice in tenant mode", []string{defaultZones, `corednsMonitor.enabled=true`, `tenant.enabled=true`}, "corednsMonitor.enabled: tenant mode's CoreDNS is scraped by serviceMonitor.enabled already"},
	}
	tests = append(tests, struct {
		name string
		set  []string
		want string
	}{"a disabled target still gets its fields checked", []string{defaultZones, `targets.off={"enabled":false,"zones":["Not A Zone"]}`}, `targets.off.zones[0]: "Not A Zone" is not a DNS zone`})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := helmTemplate(t, h, valuesCase{set: tt.set})
			if err == nil {
				t.Fatalf("rendered; want an error naming %q\n%.2000s", tt.want, out)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error does not name %q:\n%v", tt.want, err)
			}
		})
	}
}

// TestBadTargetNameErrorIsTheSameEveryTime (issue 34, 5): a target name
// that is not a DNS label fails with one line naming targets and the name,
// the same on every render (the schema's propertyNames rule blamed a
// different field each time).
func TestBadTargetNameErrorIsTheSameEveryTime(t *testing.T) {
	h := harness.RequireHelm(t)
	set := []string{`targets={"ingress-nginx":{"enabled":false},"Foo_Bar":{"zones":["example.com"],"ingressClasses":["x"],"upstream":{"namespace":"n","name":"c","ports":[{"name":"http","port":80,"containerPort":8081}]}}}`}
	first := ""
	for i := range 5 {
		_, err := helmTemplate(t, h, valuesCase{set: set})
		if err == nil {
			t.Fatal("a target named Foo_Bar rendered")
		}
		msg := err.Error()[strings.Index(err.Error(), "\n")+1:] // after the command line
		if !strings.Contains(msg, `targets: "Foo_Bar" is not a valid target name`) {
			t.Fatalf("render %d: the error does not name targets and Foo_Bar:\n%s", i, msg)
		}
		if i == 0 {
			first = msg
		} else if msg != first {
			t.Fatalf("render %d gave another error:\n%s\nfirst:\n%s", i, msg, first)
		}
	}
}

// TestRenderedManifestsAreCurrent renders the plain manifests the way
// `make manifests` does (build/manifests.sh into a temporary folder) and
// fails when the committed manifests/rendered/*/hairpin.yaml differ.
func TestRenderedManifestsAreCurrent(t *testing.T) {
	h := harness.RequireHelm(t)
	root := repoDir(t)
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "build", "manifests.sh"), out)
	cmd.Env = append(os.Environ(), "HELM="+h.Bin)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build/manifests.sh: %v\n%s", err, b)
	}
	fresh, err := filepath.Glob(filepath.Join(out, "*", "hairpin.yaml"))
	if err != nil || len(fresh) == 0 {
		t.Fatalf("build/manifests.sh wrote nothing (%v)", err)
	}
	for _, f := range fresh {
		name := filepath.Base(filepath.Dir(f))
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			committed := filepath.Join(root, "manifests", "rendered", name, "hairpin.yaml")
			got, err := os.ReadFile(committed)
			if err != nil {
				t.Fatalf("%v; run `make manifests`", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from what the chart renders; run `make manifests`\n%s", committed, firstDiff(got, want))
			}
		})
	}
}

// firstDiff describes the first differing line of got and want.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + itoa(int32(i+1)) + ":\n  committed: " + gl + "\n  rendered:  " + wl
		}
	}
	return ""
}

// TestKustomizationsListTheRenderedFiles checks that every kustomization
// left under manifests/ is one of the rendered folders, listing nothing but
// its rendered file, and that `kubectl kustomize` gives the same objects:
// no hand-maintained copy of any object remains.
func TestKustomizationsListTheRenderedFiles(t *testing.T) {
	root := filepath.Join(repoDir(t), "manifests")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "kustomization.yaml" {
			return nil
		}
		dir := filepath.Dir(path)
		rel, _ := filepath.Rel(root, dir)
		t.Run(rel, func(t *testing.T) {
			if filepath.Dir(rel) != "rendered" {
				t.Fatalf("kustomization outside manifests/rendered: %s", rel)
			}
			k := readYAML(t, path)
			if res, _ := k["resources"].([]any); len(res) != 1 || res[0] != "hairpin.yaml" {
				t.Errorf("resources %v; want [hairpin.yaml] only", k["resources"])
			}
			for key := range k {
				if key != "apiVersion" && key != "kind" && key != "resources" {
					t.Errorf("kustomization has %q; it must only list the rendered file", key)
				}
			}
			got, err := decode(kustomize(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "hairpin.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Errorf("kubectl kustomize gives %d objects; hairpin.yaml has %d", len(got), len(want))
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// kustomize runs `kubectl kustomize dir`.
func kustomize(t *testing.T, dir string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl(t), "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	return out
}

// kubectl returns the kubectl that `make tools` builds (skipped, or failed
// under HAIRPIN_REQUIRE_E2E=1, without it).
func kubectl(t testing.TB) string { return harness.RequireKubectl(t) }

// TestAlertRulesAreTheDocumentedOnes checks that the chart's rule file is
// the one in docs/alerts (which `make manifests` copies in), when that file
// exists, and that the PrometheusRule carries exactly its groups.
func TestAlertRulesAreTheDocumentedOnes(t *testing.T) {
	root := repoDir(t)
	chartRules := filepath.Join(chartDir(t), "files", "hairpin.rules.yaml")
	if docs, err := os.ReadFile(filepath.Join(root, "docs", "alerts", "hairpin.rules.yaml")); err == nil {
		got, err := os.ReadFile(chartRules)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, docs) {
			t.Errorf("%s differs from docs/alerts/hairpin.rules.yaml; run `make manifests`", chartRules)
		}
	}
	want := readYAML(t, chartRules)
	for _, r := range renderAll(t) {
		for _, u := range allUnstructured(r.objs, "PrometheusRule") {
			t.Run(r.name, func(t *testing.T) {
				spec, _ := u.Object["spec"].(map[string]any)
				if !equalJSON(t, spec, want) {
					t.Errorf("PrometheusRule spec differs from %s", chartRules)
				}
				groups, _ := spec["groups"].([]any)
				if len(groups) == 0 {
					t.Errorf("PrometheusRule has no rule groups")
				}
			})
		}
	}
}
