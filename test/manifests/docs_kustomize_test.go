package manifests

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// overlayDir is the kustomize overlay the docs give for kubectl users.
func overlayDir(t testing.TB) string {
	return filepath.Join(repoDir(t), "docs", "examples", "kustomize")
}

// ownRegistryOverlayDir is the overlay the docs give for a registry of
// your own, on top of the zones overlay.
func ownRegistryOverlayDir(t testing.TB) string {
	return filepath.Join(repoDir(t), "docs", "examples", "own-registry")
}

// TestKustomizeOverlaySetsZonesAndRunsOurImages (issue 21, 1 and 5; issue
// 34, 1): the overlay that README.md and docs/install.md apply renders the
// plain manifests with its zones on the default target and the proxy image
// the plain manifests carry, the one the release publishes (an overlay
// that points at a placeholder registry ends in ImagePullBackOff); the own
// registry overlay on top of it swaps that image for the registry's, and
// its images: entry names the image the plain manifests carry, so that it
// applies.
func TestKustomizeOverlaySetsZonesAndRunsOurImages(t *testing.T) {
	_, appVersion := chartMeta(t)
	objs, err := decode(kustomize(t, overlayDir(t)))
	if err != nil {
		t.Fatal(err)
	}
	svc := find[*corev1.Service](objs, "ingress-nginx")
	if svc == nil || svc.Annotations[zonesAnnotation] != "example.com,example.org" {
		t.Fatalf("target Service %v; want the overlay's zones example.com,example.org", svc)
	}
	base, err := decode([]byte(readDoc(t, filepath.Join("manifests", "rendered", "cluster", "hairpin.yaml"))))
	if err != nil {
		t.Fatal(err)
	}
	img := find[*appsv1.Deployment](base, proxyName).Spec.Template.Spec.Containers[0].Image
	if got := find[*appsv1.Deployment](objs, proxyName).Spec.Template.Spec.Containers[0].Image; got != img {
		t.Errorf("the overlay runs proxy image %s; want the plain manifests' %s", got, img)
	}

	own, err := decode(kustomize(t, ownRegistryOverlayDir(t)))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := find[*appsv1.Deployment](own, proxyName).Spec.Template.Spec.Containers[0].Image, "registry.example.com/hairpin/hairpin-proxy:"+appVersion; got != want {
		t.Errorf("own registry overlay: proxy image %s; want %s", got, want)
	}
	k := readYAML(t, filepath.Join(ownRegistryOverlayDir(t), "kustomization.yaml"))
	entries, _ := k["images"].([]any)
	if len(entries) == 0 {
		t.Fatal("the own registry overlay has no images: entry")
	}
	name, _ := entries[0].(map[string]any)["name"].(string)
	if repo, _, _ := strings.Cut(img, ":"); name != repo {
		t.Errorf("images: names %q; the plain manifests run %s", name, img)
	}
}

// TestOverlaysOnThePageAreTheFiles (issue 34, 1): every kustomization
// docs/install.md shows is, comments aside, one of the overlay files it
// links, so that the page and the file cannot disagree.
func TestOverlaysOnThePageAreTheFiles(t *testing.T) {
	files := map[string]map[string]any{}
	for _, dir := range []string{overlayDir(t), ownRegistryOverlayDir(t)} {
		rel, _ := filepath.Rel(repoDir(t), dir)
		files[rel] = readYAML(t, filepath.Join(dir, "kustomization.yaml"))
	}
	shown := 0
	for _, b := range yamlBlocks(t, "docs/install.md") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(b.Body), &m); err != nil || m["kind"] != "Kustomization" && m["resources"] == nil {
			continue
		}
		shown++
		match := ""
		for rel, f := range files {
			if reflect.DeepEqual(m, f) {
				match = rel
			}
		}
		if match == "" {
			t.Errorf("docs/install.md:%d shows a kustomization that is none of %v:\n%s", b.Line, slices.Collect(maps.Keys(files)), b.Body)
		}
	}
	if shown < len(files) {
		t.Errorf("docs/install.md shows %d kustomizations; want each of the %d overlays", shown, len(files))
	}
}

// TestZonesByOverlaySurviveReapplying (issue 21, 5), on a real API server:
// the overlay applied with server-side apply, then applied again with other
// zones, changes the annotation without a conflict; the `kubectl annotate`
// the docs no longer give conflicts with the next apply, as they say.
func TestZonesByOverlaySurviveReapplying(t *testing.T) {
	cp := newControlPlane(t)
	k := cli{t: t, kubectl: kubectl(t), kubeconfig: cp.Kubeconfig}
	zones := func() string {
		out, _ := k.run(nil, "-n", releaseNamespace, "get", "svc", "ingress-nginx", "-o", `jsonpath={.metadata.annotations.hairpin\.coredns-hairpin\.io/zones}`)
		return out
	}

	k.run(nil, "apply", "--server-side", "-k", overlayDir(t))
	if got := zones(); got != "example.com,example.org" {
		t.Fatalf("zones %q after the first apply", got)
	}

	// The user edits the zones in the overlay: an overlay of the overlay
	// stands for that edit here.
	edit := t.TempDir()
	rel, err := filepath.Rel(edit, overlayDir(t))
	if err != nil {
		t.Fatal(err)
	}
	kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + rel + "\n" +
		"patches:\n  - target: {kind: Service, name: ingress-nginx}\n    patch: |-\n" +
		"      - op: replace\n        path: /metadata/annotations/hairpin.coredns-hairpin.io~1zones\n        value: example.net\n"
	if err := os.WriteFile(filepath.Join(edit, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		t.Fatal(err)
	}
	k.run(nil, "apply", "--server-side", "-k", edit)
	if got := zones(); got != "example.net" {
		t.Fatalf("zones %q after re-applying with example.net", got)
	}

	k.run(nil, "-n", releaseNamespace, "annotate", "--overwrite", "svc", "ingress-nginx", zonesAnnotation+"=example.org")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, k.kubectl, "--kubeconfig", k.kubeconfig, "apply", "--server-side", "-k", edit).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "conflict") || !strings.Contains(string(out), "hairpin.coredns-hairpin.io/zones") {
		t.Errorf("apply after kubectl annotate: %v\n%s\nwant a conflict on the zones annotation, as docs/install.md says", err, out)
	}
}
