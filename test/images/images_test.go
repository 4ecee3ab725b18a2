// Package images tests the container images that `make images` builds with
// build/images/imagebuild: their configuration, and that the binary inside
// each is byte for byte the one in HAIRPIN_BIN and runs.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/coredns-hairpin/hairpin/build/images/imagebuild"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// image is one image under test.
type image struct {
	spec        func(binDir, version string) imagebuild.Spec
	binary      string   // name in HAIRPIN_BIN
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

// TestImageCarriesTheBuiltBinary builds each image from HAIRPIN_BIN with
// imagebuild and checks the tarball; it also checks the tarball that
// `make images` left in HAIRPIN_BIN/images, when there is one newer than
// the binary.
func TestImageCarriesTheBuiltBinary(t *testing.T) {
	for _, im := range images {
		t.Run(im.binary, func(t *testing.T) {
			bin := harness.RequireBinary(t, im.binary)
			version := binaryVersion(t, bin, im)

			t.Run("built by imagebuild", func(t *testing.T) {
				path, err := imagebuild.Write(im.spec(filepath.Dir(bin), version), t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				checkImage(t, path, bin, version, im)
			})

			t.Run("built by make images", func(t *testing.T) {
				// Always a skip, never a failure: `make test` does not build
				// images, and the subtest above covers the same code.
				path := filepath.Join(filepath.Dir(bin), "images", im.binary+".tar")
				tarInfo, err := os.Stat(path)
				if err != nil {
					t.Skipf("%v; run `make images` to check its output too", err)
				}
				binInfo, err := os.Stat(bin)
				if err != nil {
					t.Fatal(err)
				}
				if tarInfo.ModTime().Before(binInfo.ModTime()) {
					t.Skipf("%s is older than %s; run `make images` to check its output too", path, bin)
				}
				checkImage(t, path, bin, version, im)
			})
		})
	}
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

// checkImage checks the tarball at path against the binary bin.
func checkImage(t *testing.T, path, bin, version string, im image) {
	t.Helper()
	spec := im.spec(filepath.Dir(bin), version)

	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil {
		t.Fatalf("docker-load manifest of %s: %v", path, err)
	}
	if len(manifest) != 1 || !slices.Equal(manifest[0].RepoTags, []string{spec.Tag()}) {
		t.Fatalf("manifest.json of %s: %+v; want one image tagged %s", path, manifest, spec.Tag())
	}
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("config of %s: %v", path, err)
	}
	c := cf.Config
	checks := []struct {
		what      string
		got, want any
	}{
		{"os/architecture", cf.OS + "/" + cf.Architecture, "linux/amd64"},
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
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sha(content), sha(want); got != want {
		t.Fatalf("binary in the image has sha256 %s; %s has %s", got, bin, want)
	}

	// The binary out of the image runs and prints the same version.
	extracted := filepath.Join(t.TempDir(), im.binary)
	if err := os.WriteFile(extracted, content, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := binaryVersion(t, extracted, im); got != version {
		t.Errorf("binary from the image prints version %q; want %q", got, version)
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
