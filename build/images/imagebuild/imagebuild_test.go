package imagebuild

import (
	"archive/tar"
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"

	"github.com/coredns-hairpin/hairpin/test/harness/rootfs"
)

func TestTagForMakesVersionsValidTags(t *testing.T) {
	tests := []struct {
		name, version, want string
	}{
		{"release tag kept", "v0.1.0", "v0.1.0"},
		{"git describe kept", "v0.1.0-3-gabc1234-dirty", "v0.1.0-3-gabc1234-dirty"},
		{"plus becomes dash", "v1.0.0+build.1", "v1.0.0-build.1"},
		{"leading dot trimmed", ".x", "x"},
		{"empty is dev", "", "dev"},
		{"long is cut to 128", strings.Repeat("a", 200), strings.Repeat("a", 128)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TagFor(tt.version); got != tt.want {
				t.Errorf("TagFor(%q) = %q; want %q", tt.version, got, tt.want)
			}
		})
	}
}

// The value `setcap cap_net_bind_service=+ep` writes, as getfattr -e hex
// shows it: revision 2 with the effective flag, bit 10 permitted.
func TestNetBindServiceCapabilityIsWhatSetcapWrites(t *testing.T) {
	const want = "0100000200040000000000000000000000000000"
	if got := hex.EncodeToString(NetBindServiceCapability()); got != want {
		t.Errorf("capability %s; want %s", got, want)
	}
}

func TestIndexDescribesEveryPlatformWithItsOwnImage(t *testing.T) {
	dir := t.TempDir()
	for _, arch := range Arches {
		pd := PlatformDir(dir, "linux", arch)
		if err := os.MkdirAll(pd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pd, "hairpin-proxy"), []byte("binary for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := Index(Proxy(dir, "v1.2.3"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex || len(m.Manifests) != len(Arches) {
		t.Fatalf("index %s with %d manifests; want an OCI index of %d", m.MediaType, len(m.Manifests), len(Arches))
	}
	for i, desc := range m.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if desc.Platform == nil || desc.Platform.Architecture != Arches[i] || cf.Architecture != Arches[i] || cf.OS != "linux" {
			t.Errorf("manifest %d: platform %v, config %s/%s; want linux/%s", i, desc.Platform, cf.OS, cf.Architecture, Arches[i])
		}
	}
	if m.Manifests[0].Digest == m.Manifests[1].Digest {
		t.Errorf("both platforms share one image")
	}
}

func TestIndexRefusesAMissingBinary(t *testing.T) {
	_, err := Index(Proxy(t.TempDir(), "v1"))
	if err == nil || !strings.Contains(err.Error(), "linux/amd64") {
		t.Fatalf("error %v; want one naming the platform whose binary is missing", err)
	}
}

// writeBinaries writes a fake binary named name for every architecture
// under dir and returns dir.
func writeBinaries(t *testing.T, dir, name, content string) string {
	t.Helper()
	for _, arch := range Arches {
		pd := PlatformDir(dir, "linux", arch)
		if err := os.MkdirAll(pd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pd, name), []byte(content+arch), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestSameInputsGiveTheSameDigest(t *testing.T) {
	digest := func(t *testing.T, binary string) string {
		t.Helper()
		idx, err := Index(CoreDNS(writeBinaries(t, t.TempDir(), "coredns", binary), "v1.2.3"))
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	first, second, changed := digest(t, "binary"), digest(t, "binary"), digest(t, "binarY")
	if first != second {
		t.Errorf("two builds of the same binaries: index %s, then %s; want one digest", first, second)
	}
	if first == changed {
		t.Errorf("another binary gave the same index digest %s", first)
	}
}

func TestNewLayerIsSortedWithFixedTimesAndNoNames(t *testing.T) {
	l, err := NewLayer([]File{
		file("/etc/passwd", 0o644, "x"),
		dir("/tmp", fs.ModeSticky|0o777),
		dir("/etc", 0o755),
		{Path: "/bin", Mode: 0o755 | fs.ModeSetuid, UID: 1, GID: 2, Body: []byte("b"), PAXRecords: map[string]string{CapabilityXattr: "c"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := rootfs.WalkLayer(l, func(hdr *tar.Header, _ io.Reader) error {
		if !hdr.ModTime.Equal(time.Unix(0, 0)) || hdr.Uname != "" || hdr.Gname != "" {
			t.Errorf("%s: mtime %v, owner names %q:%q; want the epoch and none", hdr.Name, hdr.ModTime, hdr.Uname, hdr.Gname)
		}
		got = append(got, fmt.Sprintf("%s %c %o %d:%d %q", hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Uid, hdr.Gid, hdr.PAXRecords[CapabilityXattr]))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{`bin 0 4755 1:2 "c"`, `etc/ 5 755 0:0 ""`, `etc/passwd 0 644 0:0 ""`, `tmp/ 5 1777 0:0 ""`}
	if !slices.Equal(got, want) {
		t.Errorf("layer entries\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestNewLayerRefusesWhatARuntimeWouldGuess(t *testing.T) {
	tests := []struct {
		name  string
		files []File
		err   string
	}{
		{"a file whose folder is missing", []File{file("/etc/passwd", 0o644, "")}, "/etc/passwd: its folder /etc is not in the layer"},
		{"a path listed twice", []File{file("/a", 0o644, ""), file("/a", 0o600, "")}, "/a: listed twice"},
		{"a relative path", []File{file("etc", 0o644, "")}, `"etc": want a clean absolute path`},
		{"an unclean path", []File{dir("/etc", 0o755), file("/etc/../x", 0o644, "")}, `"/etc/../x": want a clean absolute path`},
		{"a folder with content", []File{{Path: "/d", Mode: fs.ModeDir | 0o755, Body: []byte("x")}}, "/d: a folder with content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewLayer(tt.files); err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("NewLayer error %v; want one containing %q", err, tt.err)
			}
		})
	}
}

func TestCABundleLeavesOutConstrainedRoots(t *testing.T) {
	pemBundle, n, err := CABundle()
	if err != nil {
		t.Fatal(err)
	}
	inBundle := map[string]bool{}
	for rest := pemBundle; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		inBundle[string(b.Bytes)] = true
	}
	if len(inBundle) != n {
		t.Errorf("bundle holds %d distinct certificates; CABundle says %d", len(inBundle), n)
	}
	constrained := 0
	for root := range bundle.Roots() {
		if in := inBundle[string(root.Certificate)]; in == (root.Constraint != nil) {
			t.Errorf("root %x (constrained %t) in the bundle: %t", sha256.Sum256(root.Certificate), root.Constraint != nil, in)
		}
		if root.Constraint != nil {
			constrained++
		}
	}
	t.Logf("%d roots, %d constrained ones left out", n, constrained)
}

func TestZoneinfoFiles(t *testing.T) {
	goZip, err := GoZoneinfo()
	if err != nil {
		t.Fatal(err)
	}
	tzif := "TZif2" + strings.Repeat("\x00", 40)
	tests := []struct {
		name    string
		zip     string // path of the zip; empty: one made of entries
		entries map[string]string
		check   string // a zone that must load
		err     string
	}{
		{name: "Go's database", zip: goZip, check: "Europe/Berlin"},
		{name: "a name climbing out", entries: map[string]string{"../etc/passwd": tzif}, err: `entry "../etc/passwd": not a local name`},
		{name: "an absolute name", entries: map[string]string{"/etc/passwd": tzif}, err: `entry "/etc/passwd": not a local name`},
		{name: "not TZif", entries: map[string]string{"Europe/Berlin": "root:x:0:0"}, err: "Europe/Berlin: not a TZif file"},
		{name: "empty", entries: map[string]string{}, err: "no zones"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.zip
			if path == "" {
				path = writeZip(t, tt.entries)
			}
			files, err := ZoneinfoFiles(path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ZoneinfoFiles error %v; want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := NewLayer(append(files, dir("/usr", 0o755), dir("/usr/share", 0o755))); err != nil {
				t.Fatalf("the zones do not make a layer: %v", err)
			}
			for _, f := range files {
				if f.Path != ZoneinfoDir+"/"+tt.check {
					continue
				}
				loc, err := time.LoadLocationFromTZData(tt.check, f.Body)
				if err != nil {
					t.Fatal(err)
				}
				if _, off := time.Date(2024, 7, 1, 12, 0, 0, 0, loc).Zone(); off != 2*3600 {
					t.Errorf("%s in July: offset %ds; want 7200 (CEST)", tt.check, off)
				}
				return
			}
			t.Errorf("no %s/%s among %d files", ZoneinfoDir, tt.check, len(files))
		})
	}
}

func writeZip(t *testing.T, entries map[string]string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "zoneinfo.zip")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, entries[name])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBinaryLayerCarriesTheLicense(t *testing.T) {
	bin := writeBinaries(t, t.TempDir(), "hairpin-proxy", "binary for ")
	tests := []struct {
		name    string
		license []byte
		want    []string
	}{
		{"with a license", []byte("the license\n"), []string{`LICENSE 644 0:0 "the license\n"`, `hairpin-proxy 755 0:0 "binary for amd64"`}},
		{"without one", nil, []string{`hairpin-proxy 755 0:0 "binary for amd64"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Proxy(bin, "v1")
			s.License = tt.license
			l, err := Layer(s, s.Platforms[0])
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			if err := rootfs.WalkLayer(l, func(hdr *tar.Header, r io.Reader) error {
				b, err := io.ReadAll(r)
				got = append(got, fmt.Sprintf("%s %o %d:%d %q", hdr.Name, hdr.Mode, hdr.Uid, hdr.Gid, b))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("layer entries\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
