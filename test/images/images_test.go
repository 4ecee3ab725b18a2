// Package images tests the container images that `make images` builds with
// build/images/imagebuild: one OCI image index per image with linux/amd64
// and linux/arm64, each platform's configuration, and that the binary inside
// each is byte for byte the static binary built for that platform, an ELF for
// the right machine, and (on the machine's own architecture) runs;
// layout_test.go compares what each image holds with distroless's
// static-debian12:nonroot (the stock CoreDNS image's base), and
// rootfs_test.go runs each binary out of its image's rootfs, chrooted, as
// 65532.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/coredns-hairpin/hairpin/build/images/imagebuild"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/rootfs"
)

// image is one image under test.
type image struct {
	spec        func(binDir, version string) imagebuild.Spec
	binary      string   // name in HAIRPIN_BIN/linux-ARCH
	versionArgs []string // prints the version and exits
	versionRE   *regexp.Regexp
	ports       []string
	env         []string
	capability  bool // binary carries cap_net_bind_service
	base        bool // a base layer (imagebuild.Base) below the binary's
}

var images = []image{
	{
		spec:        imagebuild.CoreDNS,
		binary:      "coredns",
		versionArgs: []string{"-version"},
		// "CoreDNS-1.15.0 (coredns-hairpin VERSION)"
		versionRE: regexp.MustCompile(`CoreDNS-1\.15\.0 \(coredns-hairpin (\S+)\)`),
		ports:     []string{"53/udp", "53/tcp", "9153/tcp", "8080/tcp", "8181/tcp"},
		// distroless's, which the stock image inherits.
		env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		capability: true,
		base:       true,
	},
	{
		spec:        imagebuild.Proxy,
		binary:      "hairpin-proxy",
		versionArgs: []string{"--version"},
		versionRE:   regexp.MustCompile(`^hairpin-proxy (\S+)\n$`),
		ports:       []string{"8080/tcp", "8443/tcp", "9090/tcp"},
	},
}

// TestImageIndexHoldsEveryPlatform checks, for each image, the index that
// imagebuild writes from the per-platform binaries in HAIRPIN_BIN (`make
// images` cross-compiles them), and the output `make images` left in
// HAIRPIN_BIN/images when it is newer than the binaries, which the rebuild
// must reproduce digest for digest.
func TestImageIndexHoldsEveryPlatform(t *testing.T) {
	if want := []string{"amd64", "arm64"}; !slices.Equal(imagebuild.Arches, want) {
		t.Fatalf("imagebuild.Arches = %v; want %v", imagebuild.Arches, want)
	}
	for _, im := range images {
		t.Run(im.binary, func(t *testing.T) {
			spec, version := specOf(t, im)

			rebuilt, err := imagebuild.Write(spec, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Run("built by imagebuild", func(t *testing.T) {
				checkOutput(t, rebuilt, spec, version, im)
			})

			t.Run("built by make images", func(t *testing.T) {
				made := madeOutput(t, spec)
				checkOutput(t, made, spec, version, im)
				// Fixed times, sorted entries and pinned data: this process
				// rebuilt the very image index `make images` wrote.
				if got, want := indexDigest(t, rebuilt.Layout, spec), indexDigest(t, made.Layout, spec); got != want {
					t.Errorf("rebuilt index %s; `make images` wrote %s from the same binaries", got, want)
				}
			})
		})
	}
}

// specOf returns the Spec of im for the binaries in HAIRPIN_BIN, with the
// version they print, skipping (or failing, under HAIRPIN_REQUIRE_E2E=1)
// when a platform's binary is missing.
func specOf(t *testing.T, im image) (imagebuild.Spec, string) {
	t.Helper()
	binDir := filepath.Dir(harness.RequireBinary(t, im.binary))
	version := ""
	for _, arch := range imagebuild.Arches {
		bin := filepath.Join(imagebuild.PlatformDir(binDir, "linux", arch), im.binary)
		if _, err := os.Stat(bin); err != nil {
			harness.SkipOrFail(t, "%v; run `make images` to cross-compile the binaries of every platform", err)
		}
		if arch == runtime.GOARCH {
			version = binaryVersion(t, bin, im)
		}
	}
	if version == "" {
		t.Fatalf("no binary for this machine's architecture %s", runtime.GOARCH)
	}
	spec := im.spec(binDir, version)
	// `make images` gives every image the checkout's LICENSE.
	license, err := os.ReadFile(filepath.Join(harness.RepoDir(t), "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	spec.License = license
	return spec, version
}

// madeOutput returns what `make images` left in HAIRPIN_BIN/images for
// spec, skipping (or failing, under HAIRPIN_REQUIRE_E2E=1) when it is
// missing or older than the binaries it holds.
func madeOutput(t *testing.T, spec imagebuild.Spec) imagebuild.Output {
	t.Helper()
	dir := filepath.Join(filepath.Dir(filepath.Dir(spec.Platforms[0].Binary)), "images")
	out := imagebuild.Output{Layout: filepath.Join(dir, spec.Name), DockerTarballs: map[string]string{}}
	for _, p := range spec.Platforms {
		out.DockerTarballs[p.String()] = filepath.Join(dir, spec.Name+"-"+p.OS+"-"+p.Arch+".tar")
	}
	index, err := os.Stat(filepath.Join(out.Layout, "index.json"))
	if err != nil {
		harness.SkipOrFail(t, "%v; run `make images`", err)
	}
	for _, p := range spec.Platforms {
		if bi, err := os.Stat(p.Binary); err != nil || index.ModTime().Before(bi.ModTime()) {
			harness.SkipOrFail(t, "%s is older than %s; run `make images`", out.Layout, p.Binary)
		}
	}
	return out
}

// checkOutput checks an image's OCI layout and docker tarballs.
func checkOutput(t *testing.T, out imagebuild.Output, spec imagebuild.Spec, version string, im image) {
	t.Helper()
	idx, _ := namedIndex(t, out.Layout, spec)
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, desc := range manifest.Manifests {
		if desc.Platform == nil {
			t.Errorf("manifest %s has no platform", desc.Digest)
			continue
		}
		p := desc.Platform.OS + "/" + desc.Platform.Architecture
		platforms = append(platforms, p)
		if desc.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: manifest media type %s; want %s", p, desc.MediaType, types.OCIManifestSchema1)
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(p, func(t *testing.T) {
			checkImage(t, img, platformOf(t, spec, p), version, im)
		})
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("index platforms %v; want %v", platforms, want)
	}

	for _, p := range spec.Platforms {
		path := out.DockerTarballs[p.String()]
		t.Run("docker tarball "+p.String(), func(t *testing.T) {
			m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
			if err != nil {
				t.Fatalf("docker-load manifest of %s: %v", path, err)
			}
			if len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{spec.Tag()}) {
				t.Fatalf("manifest.json of %s: %+v; want one image tagged %s", path, m, spec.Tag())
			}
			img, err := tarball.ImageFromPath(path, nil)
			if err != nil {
				t.Fatalf("load %s: %v", path, err)
			}
			checkImage(t, img, p, version, im)
		})
	}
}

// namedIndex opens the OCI layout at dir and returns the one image index
// its index.json holds, which must be named by spec's tag, with its
// descriptor.
func namedIndex(t *testing.T, dir string, spec imagebuild.Spec) (v1.ImageIndex, v1.Descriptor) {
	t.Helper()
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatalf("OCI layout %s: %v", dir, err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	wantTag := spec.Tag()[strings.LastIndex(spec.Tag(), ":")+1:]
	if len(m.Manifests) != 1 || m.Manifests[0].Annotations[imagebuild.RefNameAnnotation] != wantTag ||
		m.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json of %s: %+v; want one image index named %s", dir, m.Manifests, wantTag)
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx, m.Manifests[0]
}

// platformOf returns the Platform "OS/ARCH" of spec.
func platformOf(t *testing.T, spec imagebuild.Spec, p string) imagebuild.Platform {
	t.Helper()
	for _, sp := range spec.Platforms {
		if sp.String() == p {
			return sp
		}
	}
	t.Fatalf("the index has %s, which the spec does not build", p)
	return imagebuild.Platform{}
}

// binaryVersion runs bin's version flag and returns the version it prints.
func binaryVersion(t *testing.T, bin string, im image) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, im.versionArgs...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(im.versionArgs, " "), err, out)
	}
	m := im.versionRE.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("%s %s printed %q; want a match of %s", bin, strings.Join(im.versionArgs, " "), out, im.versionRE)
	}
	return m[1]
}

// checkImage checks one platform's image against the binary built for it.
func checkImage(t *testing.T, img v1.Image, p imagebuild.Platform, version string, im image) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	c := cf.Config
	checks := []struct {
		what      string
		got, want any
	}{
		{"os/architecture", cf.OS + "/" + cf.Architecture, p.String()},
		{"User", c.User, "65532:65532"},
		{"Entrypoint", c.Entrypoint, []string{"/" + im.binary}},
		{"Cmd", c.Cmd, []string(nil)},
		{"WorkingDir", c.WorkingDir, "/"},
		{"Env", c.Env, im.env},
		{"ExposedPorts", slices.Sorted(maps.Keys(c.ExposedPorts)), slices.Sorted(slices.Values(im.ports))},
		{"title label", c.Labels["org.opencontainers.image.title"], im.binary},
		{"source label", c.Labels["org.opencontainers.image.source"], "https://github.com/coredns-hairpin/hairpin"},
		{"version label", c.Labels["org.opencontainers.image.version"], version},
		{"licenses label", c.Labels["org.opencontainers.image.licenses"], "Apache-2.0"},
	}
	for _, ck := range checks {
		if !equal(ck.got, ck.want) {
			t.Errorf("%s: %v; want %v", ck.what, ck.got, ck.want)
		}
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	// The binary's own layer comes last, on the base (layout_test.go checks
	// what that holds) or on scratch.
	wantLayers := map[bool]int{true: 2, false: 1}[im.base]
	if len(layers) != wantLayers {
		t.Fatalf("%d layers; want %d (base %t, then the binary)", len(layers), wantLayers, im.base)
	}
	files := layerFiles(t, layers[len(layers)-1])
	if names := slices.Sorted(maps.Keys(files)); !slices.Equal(names, []string{"LICENSE", im.binary}) {
		t.Fatalf("the binary's layer holds %q; want the binary %s and LICENSE", names, im.binary)
	}
	// The checkout's license, as `make images` gives every image.
	license, err := os.ReadFile(filepath.Join(harness.RepoDir(t), "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if l := files["LICENSE"]; l.hdr.Typeflag != tar.TypeReg || l.hdr.Mode != 0o644 || l.hdr.Uid != 0 || l.hdr.Gid != 0 || !bytes.Equal(l.content, license) {
		t.Errorf("/LICENSE: type %c mode %o owner %d:%d, %d bytes; want the checkout's LICENSE, a regular file 644 0:0", l.hdr.Typeflag, l.hdr.Mode, l.hdr.Uid, l.hdr.Gid, len(l.content))
	}
	hdr, content := files[im.binary].hdr, files[im.binary].content
	if hdr.Typeflag != tar.TypeReg {
		t.Errorf("layer holds %q (type %c); want the regular file %q", hdr.Name, hdr.Typeflag, im.binary)
	}
	// Root-owned, as in the stock image: 65532 runs it and cannot rewrite it.
	if hdr.Mode != 0o755 || hdr.Uid != 0 || hdr.Gid != 0 {
		t.Errorf("layer file mode %o owner %d:%d; want 755 0:0", hdr.Mode, hdr.Uid, hdr.Gid)
	}
	capability, hasCap := hdr.PAXRecords[imagebuild.CapabilityXattr]
	switch {
	case im.capability && capability != string(imagebuild.NetBindServiceCapability()):
		t.Errorf("layer file capability %x; want cap_net_bind_service=ep (%x)", capability, imagebuild.NetBindServiceCapability())
	case !im.capability && hasCap:
		t.Errorf("layer file has a capability (%x); want none", capability)
	}
	checkELF(t, content, p.Arch)
	want, err := os.ReadFile(p.Binary)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sha(content), sha(want); got != want {
		t.Fatalf("binary in the image has sha256 %s; %s has %s", got, p.Binary, want)
	}

	if p.Arch != runtime.GOARCH {
		return
	}
	// The binary out of the image runs here and prints the same version.
	extracted := filepath.Join(t.TempDir(), im.binary)
	if err := os.WriteFile(extracted, content, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := binaryVersion(t, extracted, im); got != version {
		t.Errorf("binary from the image prints version %q; want %q", got, version)
	}
}

// checkELF checks that b is a static linux ELF executable for goarch.
func checkELF(t *testing.T, b []byte, goarch string) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("binary is not an ELF file: %v", err)
	}
	defer f.Close()
	if want := harness.ELFMachine[goarch]; f.Machine != want {
		t.Errorf("ELF machine %v; want %v for %s", f.Machine, want, goarch)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		t.Errorf("ELF type %v; want an executable", f.Type)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("binary has an ELF interpreter: it is not static, and the scratch image has no libc")
		}
	}
}

// onlyFile returns the header and content of the single entry of layer,
// failing the test if there is not exactly one.
// layerFile is one entry of a layer.
type layerFile struct {
	hdr     *tar.Header
	content []byte
}

// layerFiles returns the entries of layer by name.
func layerFiles(t *testing.T, layer v1.Layer) map[string]layerFile {
	t.Helper()
	files := map[string]layerFile{}
	if err := rootfs.WalkLayer(layer, func(hdr *tar.Header, r io.Reader) error {
		content, err := io.ReadAll(r)
		files[hdr.Name] = layerFile{hdr: hdr, content: content}
		return err
	}); err != nil {
		t.Fatalf("layer: %v", err)
	}
	return files
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func equal(a, b any) bool {
	switch a := a.(type) {
	case []string:
		return slices.Equal(a, b.([]string))
	}
	return a == b
}

// indexDigest returns the digest of the image index the layout at dir
// holds for spec.
func indexDigest(t *testing.T, dir string, spec imagebuild.Spec) v1.Hash {
	t.Helper()
	_, desc := namedIndex(t, dir, spec)
	return desc.Digest
}
