package cluster

import (
	"embed"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// CiliumValues are chart values of Cilium's by path, as `helm --set` names
// them ("socketLB.hostNamespaceOnly"). A nil value unsets the path, so the
// chart renders as if no file had set it.
type CiliumValues map[string]any

// CiliumNamespace is where Cozystack installs Cilium (its networking
// packages' cilium component), and so where the harness records it.
const CiliumNamespace = "cozy-cilium"

// cozystackCilium holds Cozystack's values files for Cilium's chart, each
// naming the file and the commit it comes from.
//
//go:embed testdata/cozystack/cilium/*.yaml
var cozystackCilium embed.FS

// ciliumValueFiles are the values files the chart is rendered with, in
// helm's -f order, before a shape's own [CiliumValues]: the released
// chart's values that the module's chart leaves blank, then the files of
// Cozystack's default networking variant, kubeovn-cilium
// (packages/core/platform/sources/networking.yaml of cozystack/cozystack),
// in its order. key is the top-level key the values sit under in the
// file: Cozystack's umbrella chart hands `cilium:` to Cilium's subchart.
var ciliumValueFiles = []valueFile{
	{"released-chart.yaml", ""},
	{"values.yaml", "cilium"},
	{"values-talos.yaml", "cilium"},
	{"values-kubeovn.yaml", "cilium"},
}

// valueFile is one of Cozystack's values files in testdata, and the
// top-level key its values sit under ("" for none).
type valueFile struct{ name, key string }

// readValueFiles reads files, each file's values unwrapped from its key,
// in order.
func readValueFiles(files []valueFile) ([]map[string]any, error) {
	var out []map[string]any
	for _, f := range files {
		b, err := cozystackCilium.ReadFile(path.Join("testdata/cozystack/cilium", f.name))
		if err != nil {
			return nil, fmt.Errorf("cilium values: %w", err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("cilium values %s: %w", f.name, err)
		}
		if f.key != "" {
			var ok bool
			if m, ok = m[f.key].(map[string]any); !ok {
				return nil, fmt.Errorf("cilium values %s: no %s: map", f.name, f.key)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// lookup is the value at the dotted path p of m, and whether m sets it.
func lookup(m map[string]any, p string) (any, bool) {
	var v any = m
	for _, k := range strings.Split(p, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// cozystackValue is what the shape's Cozystack files set at path p, the
// last file that sets it winning as with helm's -f; false when none does
// (the chart's default holds).
func (s *ciliumShape) cozystackValue(p string) (any, bool, error) {
	files, err := s.cozystackValues()
	if err != nil {
		return nil, false, err
	}
	for _, m := range slices.Backward(files) {
		if v, ok := lookup(m, p); ok {
			return v, true, nil
		}
	}
	return nil, false, nil
}

// nest turns values by path into the nested map of a values file.
func (v CiliumValues) nest() map[string]any {
	out := map[string]any{}
	for _, p := range slices.Sorted(maps.Keys(v)) {
		keys := strings.Split(p, ".")
		m := out
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = v[p]
	}
	return out
}

// writeValueFiles writes the shape's Cozystack files, unwrapped, and then
// values into dir, and returns them in helm's -f order.
func (s *ciliumShape) writeValueFiles(dir string, values CiliumValues) ([]string, error) {
	files, err := s.cozystackValues()
	if err != nil {
		return nil, err
	}
	files = append(slices.Clone(files), values.nest())
	var paths []string
	for i, m := range files {
		b, err := yaml.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("cilium values: %w", err)
		}
		p := filepath.Join(dir, fmt.Sprintf("%d.yaml", i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, fmt.Errorf("cilium values: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}
