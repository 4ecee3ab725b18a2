package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/coredns-hairpin/hairpin/build/images/imagebuild"
)

func TestResetOutReplacesOnlyAReleasesFolder(t *testing.T) {
	out := filepath.Join(t.TempDir(), "release")
	if err := resetOut(out); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(out, "kubectl-hairpin_v0.0.9_linux_amd64.tar.gz")
	if err := os.WriteFile(stale, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := resetOut(out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("an earlier release's artifact survived: %v", err)
	}

	mine := t.TempDir()
	if err := os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := resetOut(mine); err == nil || !strings.Contains(err.Error(), "no release wrote it") {
		t.Fatalf("error %v; want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(mine, "notes.txt")); err != nil {
		t.Errorf("a folder that is not a release's lost a file: %v", err)
	}
}

// writeLayouts writes the layouts of both images for version, from stand-in
// binaries, as `make images` does.
func writeLayouts(t *testing.T, version string) string {
	t.Helper()
	bin, out := t.TempDir(), t.TempDir()
	for _, arch := range imagebuild.Arches {
		d := imagebuild.PlatformDir(bin, "linux", arch)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range imageNames {
			if err := os.WriteFile(filepath.Join(d, n), []byte(n+" for "+arch), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range []imagebuild.Spec{imagebuild.CoreDNS(bin, version), imagebuild.Proxy(bin, version)} {
		if _, err := imagebuild.Write(s, out); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestLoadImagesNamesTheRegistryAndDigest(t *testing.T) {
	dir := writeLayouts(t, "v0.0.0-test")
	reg, err := parseRegistry("127.0.0.1:5000/hairpin")
	if err != nil {
		t.Fatal(err)
	}
	images, err := loadImages(dir, reg, "v0.0.0-test")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range imageNames {
		im := images[n]
		d, err := im.index.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if im.Ref != "127.0.0.1:5000/hairpin/"+n+":v0.0.0-test" || im.Repo != "127.0.0.1:5000/hairpin/"+n || im.Digest != d.String() {
			t.Errorf("%s: %+v; want the loopback registry's ref and digest %s", n, im.pushed, d)
		}
	}
}

func TestLoadImagesRefusesAnotherVersionsImages(t *testing.T) {
	dir := writeLayouts(t, "v0.1.0-3-gabc1234")
	reg, err := parseRegistry("ghcr.io/coredns-hairpin")
	if err != nil {
		t.Fatal(err)
	}
	_, err = loadImages(dir, reg, "v0.1.0")
	if err == nil || !strings.Contains(err.Error(), `holds ["v0.1.0-3-gabc1234"], not "v0.1.0"; run `+"`make images VERSION=v0.1.0`") {
		t.Fatalf("error %v; want a refusal naming both versions", err)
	}
}

func TestPinChartNamesThePushedImages(t *testing.T) {
	images := map[string]image{
		"coredns":       {pushed: pushed{Repo: "127.0.0.1:5000/hairpin/coredns", Digest: "sha256:" + strings.Repeat("a", 64)}},
		"hairpin-proxy": {pushed: pushed{Repo: "127.0.0.1:5000/hairpin/hairpin-proxy", Digest: "sha256:" + strings.Repeat("b", 64)}},
	}
	src := filepath.Join("..", "..", "manifests", "coredns-hairpin")
	chart, err := pinChart(src, t.TempDir(), "v0.0.0-test", images)
	if err != nil {
		t.Fatal(err)
	}
	values, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"proxy.image.repository":  "127.0.0.1:5000/hairpin/hairpin-proxy",
		"proxy.image.tag":         "v0.0.0-test",
		"proxy.image.digest":      "sha256:" + strings.Repeat("b", 64),
		"tenant.image.repository": "127.0.0.1:5000/hairpin/coredns",
		"tenant.image.tag":        "v0.0.0-test",
		"tenant.image.digest":     "sha256:" + strings.Repeat("a", 64),
	} {
		got, err := scalarAt(values, path)
		if err != nil || got != want {
			t.Errorf("%s = %q (%v); want %q", path, got, err, want)
		}
	}
	meta, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"version": "0.0.0-test", "appVersion": "v0.0.0-test"} {
		if got, err := scalarAt(meta, path); err != nil || got != want {
			t.Errorf("Chart.yaml %s = %q (%v); want %q", path, got, err, want)
		}
	}
	readme, err := os.ReadFile(filepath.Join(chart, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "| `proxy.image.repository` | string | `\"127.0.0.1:5000/hairpin/hairpin-proxy\"` |") {
		t.Errorf("the packaged README's values table does not show the pinned repository")
	}
	orig, err := os.ReadFile(filepath.Join(src, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := scalarAt(orig, "proxy.image.digest"); got != "" {
		t.Errorf("pinning changed the source chart: proxy.image.digest %q", got)
	}
}

// scalarAt returns the value of the scalar at a dotted path of src, with
// the lookup the release edits values by.
func scalarAt(src []byte, path string) (string, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return "", err
	}
	n, err := lookup(&root, path)
	if err != nil {
		return "", err
	}
	return n.Value, nil
}
