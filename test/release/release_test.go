package release

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/coredns-hairpin/hairpin/build/images/imagebuild"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// The release the test makes: a version no real release has, into the
// path /hairpin of the in-process registry.
const (
	testVersion  = "v0.0.0-test"
	chartVersion = "0.0.0-test"
	registryPath = "hairpin"
	namespace    = "hairpin-system"
)

// summary is what build/release writes to release.json.
type summary struct {
	Version      string `json:"version"`
	ChartVersion string `json:"chartVersion"`
	Images       map[string]struct {
		Ref, Repo, Digest string
	} `json:"images"`
	Chart struct {
		Ref, Repo, Digest string
	} `json:"chart"`
	Files []string `json:"files"`
}

// makeRelease runs README.md's `make` commands of the path before the
// first release (`make images`, then `make release`) on this checkout,
// into registry at the test's version, with its own bin folder (so that
// the images and binaries other tests read are left alone) and h's helm,
// and returns that folder.
func makeRelease(t *testing.T, h *harness.Helm, registry string, makes [][]string) string {
	t.Helper()
	makeBin, err := exec.LookPath("make")
	if err != nil {
		harness.SkipOrFail(t, "no make: %v", err)
	}
	bin := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	for _, words := range makes {
		args := append([]string{"-C", harness.RepoDir(t)}, asTheTestRuns(words, registry)[1:]...)
		cmd := exec.CommandContext(ctx, makeBin, append(args, "BIN="+bin, "HELM="+h.Bin)...)
		// Not the make (and its jobserver) that runs `make test`.
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool {
			return strings.HasPrefix(e, "MAKEFLAGS=") || strings.HasPrefix(e, "MFLAGS=") || strings.HasPrefix(e, "MAKELEVEL=")
		}), h.Env()...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(words, " "), err, out)
		}
		t.Logf("%s:\n%s", strings.Join(words, " "), lastLines(out, 12))
	}
	return bin
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestReleaseInstallsFromTheRegistry is the release end to end, as
// README.md's path before the first release takes it: `make images` and
// `make release` into an in-process registry on loopback; both image indexes
// pulled back, each platform's image holding its own version's binary for
// its architecture; the pushed chart, with its version and appVersion,
// installed by helm from oci:// onto a real control plane; and every image
// of the installed release and of the release's plain manifests resolving
// in that registry by tag and by digest, to the pushed index; README.md's
// helm install from that registry; every image and archive carries the
// checkout's LICENSE.
func TestReleaseInstallsFromTheRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and pushes a release")
	}
	h := harness.RequireHelm(t)
	harness.RequireAssets(t)
	host := startRegistry(t)
	registry := host + "/" + registryPath
	makes, helms := readmePath(t)
	bin := makeRelease(t, h, registry, makes)
	out := filepath.Join(bin, "release")

	var s summary
	b, err := os.ReadFile(filepath.Join(out, "release.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Version != testVersion || s.ChartVersion != chartVersion {
		t.Errorf("release.json: version %q chart %q", s.Version, s.ChartVersion)
	}

	t.Run("images", func(t *testing.T) {
		for _, spec := range []imagebuild.Spec{imagebuild.CoreDNS("", testVersion), imagebuild.Proxy("", testVersion)} {
			checkIndex(t, registry+"/"+spec.Name+":"+testVersion, spec.Path, s.Images[spec.Name].Digest)
		}
	})

	t.Run("chart", func(t *testing.T) {
		chart := "oci://" + registry + "/charts/coredns-hairpin"
		if s.Chart.Ref != chart {
			t.Errorf("release.json names the chart %s; want %s", s.Chart.Ref, chart)
		}
		meta := h.MustRun(t, "show", "chart", chart, "--plain-http", "--version", chartVersion)
		var c struct{ Version, AppVersion string }
		if err := yaml.Unmarshal([]byte(meta), &c); err != nil {
			t.Fatal(err)
		}
		if c.Version != chartVersion || c.AppVersion != testVersion {
			t.Errorf("pushed chart is version %q appVersion %q; want %q %q", c.Version, c.AppVersion, chartVersion, testVersion)
		}
		d, err := resolve(t, registry+"/charts/coredns-hairpin:"+chartVersion)
		if err != nil || d.String() != s.Chart.Digest {
			t.Errorf("the chart tag resolves to %v (%v); release.json says %s", d, err, s.Chart.Digest)
		}
	})

	t.Run("install", func(t *testing.T) {
		cp := harness.NewControlPlane(t, harness.ControlPlaneOptions{
			// Tenant mode's kube-dns Service takes 10.96.0.10.
			APIServerFlags: map[string][]string{"service-cluster-ip-range": {"10.96.0.0/12"}},
		})
		hk := h.WithKubeconfig(cp.Kubeconfig)
		hk.MustRun(t, "install", "hairpin", "oci://"+registry+"/charts/coredns-hairpin", "--plain-http", "--version", chartVersion,
			"--namespace", namespace, "--create-namespace",
			"--set-json", `targets.ingress-nginx.zones=["example.com"]`, "--set", "tenant.enabled=true")
		manifest := hk.MustRun(t, "get", "manifest", "hairpin", "--namespace", namespace)
		images := checkImages(t, "the installed release", []byte(manifest), registry, s)
		// The objects are in the API server as installed.
		for name, ns := range map[string]string{"hairpin-proxy": namespace, "coredns": "kube-system"} {
			d, err := cp.Clientset.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if img := d.Spec.Template.Spec.Containers[0].Image; !slices.Contains(images, img) {
				t.Errorf("Deployment %s/%s runs %s, not an image of the installed manifest %v", ns, name, img, images)
			}
		}
	})

	t.Run("README's install", func(t *testing.T) {
		// README.md's helm commands before the first release, with the
		// chart that `make release` pushed.
		cp := harness.NewControlPlane(t, harness.ControlPlaneOptions{})
		hk := h.WithKubeconfig(cp.Kubeconfig)
		for _, words := range helms {
			hk.MustRun(t, asTheTestRuns(words, registry)[1:]...)
		}
		manifest := hk.MustRun(t, "get", "manifest", "hairpin", "--namespace", namespace)
		checkImages(t, "README's install", []byte(manifest), registry, s)
	})

	t.Run("plain manifests", func(t *testing.T) {
		for _, name := range []string{"hairpin-cluster.yaml", "hairpin-tenant.yaml"} {
			b, err := os.ReadFile(filepath.Join(out, name))
			if err != nil {
				t.Fatal(err)
			}
			checkImages(t, name, b, registry, s)
		}
	})

	t.Run("sums", func(t *testing.T) { checkSums(t, out, s) })

	t.Run("license", func(t *testing.T) { checkLicense(t, registry, out, s) })
}

// checkIndex pulls the image index at tag and checks that it is the
// digest release.json names, an OCI index of linux/amd64 and linux/arm64,
// and that each platform's image holds, at path, an ELF binary for that
// platform's machine stamped with the release's version.
func checkIndex(t *testing.T, tag, path, digest string) {
	t.Helper()
	idx, err := remote.Index(ref(t, tag), remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("%s: %v", tag, err)
	}
	d, err := idx.Digest()
	if err != nil || d.String() != digest {
		t.Errorf("%s is %v (%v); release.json says %s", tag, d, err, digest)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, desc := range m.Manifests {
		if desc.Platform == nil {
			t.Errorf("%s: manifest %s has no platform", tag, desc.Digest)
			continue
		}
		p := desc.Platform.OS + "/" + desc.Platform.Architecture
		platforms = append(platforms, p)
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatalf("%s %s: %v", tag, p, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS+"/"+cf.Architecture != p {
			t.Errorf("%s %s: the image's config says %s/%s", tag, p, cf.OS, cf.Architecture)
		}
		bin, err := binaryOf(img, path)
		if err != nil {
			t.Fatalf("%s %s: %v", tag, p, err)
		}
		f, err := elf.NewFile(bytes.NewReader(bin))
		if err != nil {
			t.Fatalf("%s %s: %s is not an ELF binary: %v", tag, p, path, err)
		}
		if want := harness.ELFMachine[desc.Platform.Architecture]; f.Machine != want {
			t.Errorf("%s %s: %s is built for %v; want %v", tag, p, path, f.Machine, want)
		}
		if !bytes.Contains(bin, []byte(testVersion)) {
			t.Errorf("%s %s: %s does not carry the version %s", tag, p, path, testVersion)
		}
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("%s holds %v; want linux/amd64 and linux/arm64", tag, platforms)
	}
}

// checkImages checks every container image of the manifests in y: it is
// REGISTRY/NAME:VERSION@DIGEST of an image the release pushed, and the
// registry serves that index by the tag and by the digest. It returns the
// images.
func checkImages(t *testing.T, what string, y []byte, registry string, s summary) []string {
	t.Helper()
	var images []string
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(y)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var d appsv1.Deployment
		if err := yaml.Unmarshal(doc, &d); err != nil || d.Kind != "Deployment" {
			continue
		}
		for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
			images = append(images, c.Image)
		}
	}
	if len(images) == 0 {
		t.Fatalf("%s runs no images", what)
	}
	for _, img := range images {
		tagged, digest, ok := strings.Cut(img, "@")
		rest, inRegistry := strings.CutPrefix(tagged, registry+"/")
		name, version, _ := strings.Cut(rest, ":")
		pushed, known := s.Images[name]
		if !ok || !inRegistry || version != testVersion || !known || digest != pushed.Digest {
			t.Errorf("%s runs %s; want %s/NAME:%s@DIGEST of a pushed image", what, img, registry, testVersion)
			continue
		}
		for _, by := range []string{tagged, registry + "/" + name + "@" + digest} {
			got, err := resolve(t, by)
			if err != nil || got.String() != digest {
				t.Errorf("%s: %s resolves to %v (%v); want %s", what, by, got, err, digest)
			}
		}
	}
	return images
}

// checkSums checks SHA256SUMS against every file release.json lists, and,
// when the plugin was released, the krew manifest against its archives.
func checkSums(t *testing.T, out string, s summary) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		sum, file, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		sums[file] = sum
	}
	for _, f := range s.Files {
		if f == "SHA256SUMS" {
			continue
		}
		content, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(content)
		if sums[f] != hex.EncodeToString(h[:]) {
			t.Errorf("SHA256SUMS has %q for %s; the file's is %x", sums[f], f, h)
		}
	}
	for _, want := range []string{"coredns-hairpin-" + chartVersion + ".tgz", "hairpin-cluster.yaml", "hairpin-tenant.yaml"} {
		if _, ok := sums[want]; !ok {
			t.Errorf("SHA256SUMS lacks %s", want)
		}
	}
	if _, err := os.Stat(filepath.Join(harness.RepoDir(t), "plugin", "kubectl-hairpin", "cmd", "kubectl-hairpin")); err != nil {
		return // released before the plugin exists: no archives
	}
	k, err := os.ReadFile(filepath.Join(out, "hairpin.yaml"))
	if err != nil {
		t.Fatalf("the plugin exists but the release has no krew manifest: %v", err)
	}
	var m struct {
		Spec struct {
			Version   string `json:"version"`
			Platforms []struct {
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(k, &m); err != nil {
		t.Fatal(err)
	}
	if m.Spec.Version != testVersion || len(m.Spec.Platforms) != 4 {
		t.Errorf("krew manifest version %q with %d platforms; want %s and 4", m.Spec.Version, len(m.Spec.Platforms), testVersion)
	}
	for _, p := range m.Spec.Platforms {
		if archive := filepath.Base(p.URI); sums[archive] != p.SHA256 {
			t.Errorf("krew manifest: %s sha256 %s; SHA256SUMS has %q", archive, p.SHA256, sums[archive])
		}
	}
}
