// Package images tests the container images that `make images` builds with
// build/images/imagebuild: one OCI image index per image with linux/amd64
// and linux/arm64, each platform's configuration, and that the binary inside
// each is byte for byte the static binary built for that platform, an ELF for
// the right machine, and (on the machine's own architecture) runs.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
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
)

// image is one image under test.
type image struct {
	spec        func(binDir, version string) imagebuild.Spec
	binary      string   // name in HAIRPIN_BIN/linux-ARCH
	versionArgs []string // prints the version and exits
	versionRE   *regexp.Regexp
	ports       []string
	capability  bool // binary carries cap_net_bind_service
}

var images = []image{
	{
		spec:        imagebuild.CoreDNS,
		binary:      "coredns",
		versionArgs: []string{"-version"},
		// "CoreDNS-1.15.0 (coredns-hairpin VERSION)"
		versionRE:  regexp.MustCompile(`CoreDNS-1\.15\.0 \(coredns-hairpin (\S+)\)`),
		ports:      []string{"53/udp", "53/tcp", "9153/tcp", "8080/tcp", "8181/tcp"},
		capability: true,
	},
	{
		spec:        imagebuild.Proxy,
		binary:      "hairpin-proxy",
		versionArgs: []string{"--version"},
		versionRE:   regexp.MustCompile(`^hairpin-proxy (\S+)\n$`),
		ports:       []string{"8080/tcp", "8443/tcp", "9090/tcp"},
	},
}

// elfMachine is the ELF e_machine of each GOARCH the images are built for.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// TestImageIndexHoldsEveryPlatform checks, for each image, the index that
// imagebuild writes from the per-platform binaries in HAIRPIN_BIN (`make
// images` cross-compiles them), and the output `make images` left in
// HAIRPIN_BIN/images when it is newer than the binaries.
func TestImageIndexHoldsEveryPlatform(t *testing.T) {
	if want := []string{"amd64", "arm64"}; !slices.Equal(imagebuild.Arches, want) {
		t.Fatalf("imagebuild.Arches = %v; want %v", imagebuild.Arches, want)
	}
	for _, im := range images {
		t.Run(im.binary, func(t *testing.T) {
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

			t.Run("built by imagebuild", func(t *testing.T) {
				out, err := imagebuild.Write(spec, t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				checkOutput(t, out, spec, version, im)
			})

			t.Run("built by make images", func(t *testing.T) {
				dir := filepath.Join(binDir, "images")
				out := imagebuild.Output{Layout: filepath.Join(dir, im.binary), DockerTarballs: map[string]string{}}
				for _, p := range spec.Platforms {
					out.DockerTarballs[p.String()] = filepath.Join(dir, im.binary+"-"+p.OS+"-"+p.Arch+".tar")
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
				checkOutput(t, out, spec, version, im)
			})
		})
	}
}

// checkOutput checks an image's OCI layout and docker tarballs.
func checkOutput(t *testing.T, out imagebuild.Output, spec imagebuild.Spec, version string, im image) {
	t.Helper()
	lp, err := layout.FromPath(out.Layout)
	if err != nil {
		t.Fatalf("OCI layout %s: %v", out.Layout, err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	wantTag := spec.Tag()[strings.LastIndex(spec.Tag(), ":")+1:]
	if len(topManifest.Manifests) != 1 || topManifest.Manifests[0].Annotations[imagebuild.RefNameAnnotation] != wantTag ||
		topManifest.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json of %s: %+v; want one image index named %s", out.Layout, topManifest.Manifests, wantTag)
	}
	idx, err := top.ImageIndex(topManifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
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
	if len(layers) != 1 {
		t.Fatalf("%d layers; want 1 (the binary on scratch)", len(layers))
	}
	hdr, content := onlyFile(t, layers[0])
	if hdr.Name != im.binary || hdr.Typeflag != tar.TypeReg {
		t.Errorf("layer holds %q (type %c); want the regular file %q", hdr.Name, hdr.Typeflag, im.binary)
	}
	if hdr.Mode != 0o755 || hdr.Uid != 65532 || hdr.Gid != 65532 {
		t.Errorf("layer file mode %o owner %d:%d; want 755 65532:65532", hdr.Mode, hdr.Uid, hdr.Gid)
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
	if want := elfMachine[goarch]; f.Machine != want {
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
func onlyFile(t *testing.T, layer interface {
	Uncompressed() (io.ReadCloser, error)
}) (*tar.Header, []byte) {
	t.Helper()
	rc, err := layer.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		t.Fatalf("layer: %v", err)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, tr); err != nil {
		t.Fatalf("layer: %v", err)
	}
	if next, err := tr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("layer has more than one entry (next: %v, err %v)", next, err)
	}
	return hdr, buf.Bytes()
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
