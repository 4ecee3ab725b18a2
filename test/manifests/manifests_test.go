// Package manifests tests the Helm chart in manifests/coredns-hairpin with
// the real helm CLI (built from source by build/tools.sh): that it lints and
// renders with the default values and with every example and plain-manifest
// values file, that bad values fail naming the field, that the rendered
// objects keep the security and wiring invariants the docs promise for every
// values file, that the plain manifests in manifests/rendered are what the
// chart renders, that a real kube-apiserver accepts every object, and that
// `helm install` puts them in place.
package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// Release is the release name and namespace every test renders and
// installs with: what the plain manifests and the docs use.
const (
	releaseName      = "hairpin"
	releaseNamespace = "hairpin-system"
)

// repoDir returns the repository's root folder.
func repoDir(t testing.TB) string { return harness.RepoDir(t) }

// chartDir returns the chart's folder.
func chartDir(t testing.TB) string { return filepath.Join(repoDir(t), "manifests", "coredns-hairpin") }

// valuesCase is one set of values the chart is rendered with.
type valuesCase struct {
	name   string   // for subtests: "examples/x.yaml", "rendered/cluster", ...
	values []string // -f files, in order
	set    []string // --set-json NAME=JSON overrides
}

// args returns the helm flags of c.
func (c valuesCase) args() []string {
	var args []string
	for _, v := range c.values {
		args = append(args, "--values", v)
	}
	for _, s := range c.set {
		args = append(args, "--set-json", s)
	}
	return args
}

// defaultZones is what the default values need to render: the chart
// requires zones and ships none.
const defaultZones = `targets.ingress-nginx.zones=["example.com"]`

// valuesCases returns every values set the chart is checked with: the
// defaults plus zones, every examples/*.yaml with its header's flags, every plain-manifest render
// (manifests/rendered/NAME/values.yaml on top of the cluster base),
// testdata/every-option.yaml, which turns on everything that is off by
// default, and the chart's ci/*-values.yaml.
func valuesCases(t testing.TB) []valuesCase {
	t.Helper()
	root := repoDir(t)
	cases := []valuesCase{{name: "defaults", set: []string{defaultZones}}}
	examples, err := filepath.Glob(filepath.Join(chartDir(t), "examples", "*.yaml"))
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples in the chart (%v)", err)
	}
	for _, e := range examples {
		// As the example's own command installs it: its zones are on
		// that command line.
		cases = append(cases, valuesCase{name: "examples/" + filepath.Base(e), values: []string{e}, set: headerSets(t, filepath.Base(e))})
	}
	base := filepath.Join(root, "manifests", "rendered", "cluster", "values.yaml")
	rendered, err := filepath.Glob(filepath.Join(root, "manifests", "rendered", "*", "values.yaml"))
	if err != nil || len(rendered) < 2 {
		t.Fatalf("want manifests/rendered/{cluster,tenant}/values.yaml, got %v (%v)", rendered, err)
	}
	for _, v := range rendered {
		cases = append(cases, valuesCase{name: "rendered/" + filepath.Base(filepath.Dir(v)), values: []string{base, v}})
	}
	cases = append(cases, valuesCase{name: "every-option", values: []string{filepath.Join(root, "test", "manifests", "testdata", "every-option.yaml")}})
	// chart-testing's cases (ct lint, ct install), shipped in the chart.
	ci, err := filepath.Glob(filepath.Join(chartDir(t), "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ci {
		cases = append(cases, valuesCase{name: "ci/" + filepath.Base(c), values: []string{c}})
	}
	return cases
}

// rendered is the chart rendered with one values case.
type rendered struct {
	valuesCase
	yaml []byte
	objs []apiruntime.Object
}

// helmTemplate runs `helm template` with c and returns its output.
func helmTemplate(t testing.TB, h *harness.Helm, c valuesCase, extra ...string) ([]byte, error) {
	t.Helper()
	args := append([]string{"template", releaseName, chartDir(t), "--namespace", releaseNamespace}, c.args()...)
	out, err := h.Run(t.Context(), append(args, extra...)...)
	return []byte(out), err
}

// renderAll renders the chart with every values case.
func renderAll(t testing.TB) []rendered {
	t.Helper()
	h := harness.RequireHelm(t)
	var out []rendered
	for _, c := range valuesCases(t) {
		y, err := helmTemplate(t, h, c)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		objs, err := decode(y)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		out = append(out, rendered{valuesCase: c, yaml: y, objs: objs})
	}
	return out
}

// merged returns the values c renders with, as helm merges them: the
// chart's values.yaml, then each file (maps merge, lists replace). --set
// overrides are not applied; cases that need them check them directly.
func (c valuesCase) merged(t testing.TB) map[string]any {
	t.Helper()
	v := readYAML(t, filepath.Join(chartDir(t), "values.yaml"))
	for _, f := range c.values {
		v = mergeValues(v, readYAML(t, f))
	}
	return v
}

func readYAML(t testing.TB, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// mergeValues merges over into base as helm does: maps recursively, any
// other value (lists included) replaced.
func mergeValues(base, over map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if bm, ok := out[k].(map[string]any); ok {
			if om, ok := v.(map[string]any); ok {
				out[k] = mergeValues(bm, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// decode parses a rendered multi-document YAML stream into typed objects of
// client-go's scheme; kinds it does not know (ServiceMonitor,
// PrometheusRule) become *unstructured.Unstructured.
func decode(data []byte) ([]apiruntime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []apiruntime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("split YAML: %w", err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if apiruntime.IsNotRegisteredError(err) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				return nil, fmt.Errorf("decode %q: %w", firstLine(doc), err)
			}
			obj = u
		} else if err != nil {
			return nil, fmt.Errorf("decode %q: %w", firstLine(doc), err)
		}
		objs = append(objs, obj)
	}
}

// stripComments drops whole-line comments (helm's "# Source:" lines).
func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.SplitAfter(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(stripComments(b))), "\n")
	return line
}

// find returns the object of type T with the given name, or nil.
func find[T apiruntime.Object](objs []apiruntime.Object, name string) T {
	var zero T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			if m, err := meta.Accessor(v); err == nil && m.GetName() == name {
				return v
			}
		}
	}
	return zero
}

// all returns every object of type T.
func all[T apiruntime.Object](objs []apiruntime.Object) []T {
	var out []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// kindOf returns "Kind namespace/name" of o.
func kindOf(o apiruntime.Object) string {
	m, _ := meta.Accessor(o)
	kind := o.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		if gvks, _, err := scheme.Scheme.ObjectKinds(o); err == nil && len(gvks) > 0 {
			kind = gvks[0].Kind
		}
	}
	if m.GetNamespace() == "" {
		return kind + " " + m.GetName()
	}
	return kind + " " + m.GetNamespace() + "/" + m.GetName()
}

// TestEveryValuesFileRenders renders the chart with each values case and
// checks that it gives objects and that every object carries the chart's
// part-of label (how an operator finds what we installed).
func TestEveryValuesFileRenders(t *testing.T) {
	for _, r := range renderAll(t) {
		t.Run(r.name, func(t *testing.T) {
			if len(r.objs) == 0 {
				t.Fatal("renders no objects")
			}
			var kinds []string
			for _, o := range r.objs {
				m, _ := meta.Accessor(o)
				if m.GetLabels()["app.kubernetes.io/part-of"] != "coredns-hairpin" {
					t.Errorf("%s lacks app.kubernetes.io/part-of=coredns-hairpin", kindOf(o))
				}
				kinds = append(kinds, kindOf(o))
			}
			if dup := duplicates(kinds); len(dup) > 0 {
				t.Errorf("objects rendered twice: %v", dup)
			}
		})
	}
}

func duplicates(s []string) []string {
	seen := map[string]bool{}
	var dup []string
	for _, x := range s {
		if seen[x] && !slices.Contains(dup, x) {
			dup = append(dup, x)
		}
		seen[x] = true
	}
	return dup
}
