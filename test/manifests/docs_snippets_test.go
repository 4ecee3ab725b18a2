package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// valuesSnippet is a YAML block of a doc that holds values of this chart.
type valuesSnippet struct {
	where string // file:line
	body  string
	// complete: it names targets, so it must render alone; otherwise the
	// default target's zones are added, as the docs' install commands do.
	complete bool
}

// valuesSnippets returns the YAML blocks of the docs (the chart's README
// among them) whose top-level keys are all values of this chart and that are
// not a Kubernetes object. A block for another chart that shares a key
// with ours (the coredns chart's `coredns:` in a Cozystack
// valuesOverride) sits under a key of its own in the docs, or names keys
// ours lacks, and so is left out.
func valuesSnippets(t testing.TB) []valuesSnippet {
	t.Helper()
	top := readYAML(t, filepath.Join(chartDir(t), "values.yaml"))
	var out []valuesSnippet
	for _, f := range docFiles(t) {
		for _, b := range yamlBlocks(t, f) {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(b.Body), &m); err != nil || len(m) == 0 || m["apiVersion"] != nil || m["kind"] != nil {
				continue
			}
			ours := true
			for k := range m {
				if _, ok := top[k]; !ok {
					ours = false
				}
			}
			if !ours || isOtherChartsCoreDNS(m) {
				continue
			}
			_, complete := m["targets"]
			out = append(out, valuesSnippet{where: fmt.Sprintf("%s:%d", f, b.Line), body: b.Body, complete: complete})
		}
	}
	return out
}

// isOtherChartsCoreDNS reports a block whose coredns key is the coredns
// chart's (image, replicaCount, ...), not ours (serviceAccount only).
func isOtherChartsCoreDNS(m map[string]any) bool {
	c, ok := m["coredns"].(map[string]any)
	if !ok {
		return false
	}
	for k := range c {
		if k != "serviceAccount" {
			return true
		}
	}
	return false
}

// TestDocValuesSnippetsPassTheSchema (issue 44): every values snippet of
// the docs and of the chart's README renders with the chart's schema; one
// that names targets renders alone (a user pastes it as their values
// file), so that it disables the default target when it does not set its
// zones.
func TestDocValuesSnippetsPassTheSchema(t *testing.T) {
	h := harness.RequireHelm(t)
	snippets := valuesSnippets(t)
	if len(snippets) < 5 {
		t.Fatalf("found %d values snippets in the docs; the extraction is broken", len(snippets))
	}
	for _, s := range snippets {
		t.Run(s.where, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(file, []byte(s.body), 0o644); err != nil {
				t.Fatal(err)
			}
			c := valuesCase{values: []string{file}}
			if !s.complete {
				c.set = []string{defaultZones}
			}
			if out, err := helmTemplate(t, h, c); err != nil {
				t.Errorf("%s does not render%s:\n%s\n%v\n%.600s", s.where, map[bool]string{true: " alone"}[s.complete], strings.TrimSpace(s.body), err, out)
			}
		})
	}
	if !slices.ContainsFunc(snippets, func(s valuesSnippet) bool {
		return strings.HasPrefix(s.where, "manifests/coredns-hairpin/README.md:") && s.complete
	}) {
		t.Error("the chart README's target snippets were not found")
	}
}
