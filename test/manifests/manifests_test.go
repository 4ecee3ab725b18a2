// Package manifests tests the kustomize bases and overlays in manifests/:
// that each renders with `kubectl kustomize`, that the rendered objects keep
// the security and wiring invariants the docs promise, that a real
// kube-apiserver accepts them, and that the Corefiles they carry run in our
// CoreDNS build with exactly the RBAC they grant.
package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// manifestsDir returns the repository's manifests/ folder.
func manifestsDir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test source")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "manifests")
}

// kubectl returns the kubectl binary, or skips (fails under
// HAIRPIN_REQUIRE_E2E=1) when there is none.
func kubectl(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	return harness.RequireExecutable(t, "/usr/bin/kubectl")
}

// kustomizations returns every folder under root with a kustomization.yaml,
// relative to root and sorted: bases, components, examples and overlays.
func kustomizations(t testing.TB, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "kustomization.yaml" {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	if len(dirs) == 0 {
		t.Fatalf("no kustomization.yaml under %s", root)
	}
	slices.Sort(dirs)
	return dirs
}

// render runs `kubectl kustomize` on dir.
func render(t testing.TB, dir string) []byte {
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

// decode parses a rendered multi-document YAML stream into typed objects of
// client-go's scheme.
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
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decode %q: %w", firstLine(doc), err)
		}
		objs = append(objs, obj)
	}
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return line
}

// rendered is one kustomization's output.
type rendered struct {
	dir  string // relative to manifests/
	yaml []byte
	objs []apiruntime.Object
}

// renderAll renders every kustomization under manifests/.
func renderAll(t testing.TB) []rendered {
	t.Helper()
	root := manifestsDir(t)
	var out []rendered
	for _, dir := range kustomizations(t, root) {
		y := render(t, filepath.Join(root, dir))
		objs, err := decode(y)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		out = append(out, rendered{dir: dir, yaml: y, objs: objs})
	}
	return out
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

// wantDirs are the kustomizations the docs name; each must exist and render.
var wantDirs = []string{
	"components/gateway-api",
	"coredns",
	"examples/ingress-nginx",
	"overlays/cluster",
	"overlays/cluster-gateway",
	"overlays/tenant",
	"proxy",
	"tenant",
}

func TestEveryKustomizationRenders(t *testing.T) {
	root := manifestsDir(t)
	dirs := kustomizations(t, root)
	for _, want := range wantDirs {
		if !slices.Contains(dirs, want) {
			t.Errorf("manifests/%s/kustomization.yaml is missing", want)
		}
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			objs, err := decode(render(t, filepath.Join(root, dir)))
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) == 0 && dir != "components/gateway-api" {
				t.Errorf("renders no objects")
			}
			for _, o := range objs {
				if m, _ := meta.Accessor(o); m != nil && m.GetAnnotations()["config.kubernetes.io/local-config"] != "" {
					t.Errorf("local-config object %s leaked into the output", m.GetName())
				}
			}
		})
	}
}
