package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/coredns-hairpin/hairpin/build/images/imagebuild"
	"github.com/coredns-hairpin/hairpin/test/harness/rootfs"
)

// distroless is the fixture of gcr.io/distroless/static-debian12:nonroot:
// layout.txt lists its paths, and the files beside it hold the exact
// contents of some of them.
const distroless = "testdata/distroless-static-nonroot"

// declared is a difference from distroless that an image makes on purpose.
type declared struct {
	kind    string // "missing" (only in distroless), "extra" (only in ours), "differs"
	pattern string // a path, "PATH/**" for it and what it holds, or "*"
	reason  string
}

// deliberate are each image's differences from distroless. Any other
// difference fails TestImagesMatchTheDistrolessLayout, and so does one of
// these that no longer exists.
var deliberate = map[string][]declared{
	"coredns": {
		{"extra", "/coredns", "the program"},
		{"extra", "/LICENSE", "the project's license (Apache-2.0), which a released image carries"},
		{"missing", "/etc/os-release", "it names the distribution: ours is no Debian, and a scanner would match Debian's advisories to it"},
		{"missing", "/etc/debian_version", "Debian's, from base-files: we install no Debian package"},
		{"missing", "/etc/issue", "Debian's login banner, from base-files"},
		{"missing", "/etc/issue.net", "Debian's login banner, from base-files"},
		{"missing", "/etc/host.conf", "glibc's resolver options (base-files); a static Go program never reads it"},
		{"missing", "/usr/share/common-licenses/**", "the licenses of Debian packages, and we ship none"},
		{"missing", "/usr/share/doc/**", "the copyright files of Debian packages, and we ship none"},
		{"missing", "/var", "only dpkg's records live there"},
		{"missing", "/var/lib", "only dpkg's records live there"},
		{"missing", "/var/lib/dpkg/**", "dpkg's records of Debian packages, and we ship none"},
		{"missing", "/etc/ethertypes", "netbase: nothing in CoreDNS reads it"},
		{"missing", "/etc/rpc", "netbase: nothing in CoreDNS reads it"},
		{"missing", "/etc/protocols", "netbase: Go's net package knows tcp, udp and icmp without it"},
		{"missing", "/etc/services", "netbase: Corefiles give ports as numbers (Go's net package knows http, https and domain/udp without it)"},
		{"missing", "/usr/share/zoneinfo/iso3166.tab", "a tzdata table for tzselect; Go's time package reads only the TZif zone files"},
		{"missing", "/usr/share/zoneinfo/leap-seconds.list", "a tzdata table; Go's time package reads only the TZif zone files"},
		{"missing", "/usr/share/zoneinfo/tzdata.zi", "tzdata's source text; Go's time package reads only the TZif zone files"},
		{"missing", "/usr/share/zoneinfo/zone.tab", "a tzdata table for tzselect; Go's time package reads only the TZif zone files"},
		{"missing", "/usr/share/zoneinfo/zone1970.tab", "a tzdata table for tzselect; Go's time package reads only the TZif zone files"},
	},
	"hairpin-proxy": {
		{"extra", "/hairpin-proxy", "the program"},
		{"extra", "/LICENSE", "the project's license (Apache-2.0), which a released image carries"},
		{"missing", "*", "the proxy needs none of the system: it originates no TLS and looks up nothing but DNS names (proxy/README.md)"},
	},
}

// node is one path of an image as a runtime unpacks it.
type node struct {
	typ      string // "dir", "file", "symlink"
	mode     int64  // permission, setuid, setgid and sticky bits, as tar holds them
	uid, gid int
	caps     bool   // security.capability is cap_net_bind_service
	body     []byte // files up to 1 MiB
}

// String is the node as layout.txt writes it: "file 0644 0:0".
func (n node) String() string {
	s := fmt.Sprintf("%s %04o %d:%d", n.typ, n.mode, n.uid, n.gid)
	if n.caps {
		s += " cap_net_bind_service"
	}
	return s
}

// listings caches listImage by image digest: the layout and bundle tests
// read the same images.
var listings = struct {
	sync.Mutex
	m map[v1.Hash]map[string]node
}{m: map[v1.Hash]map[string]node{}}

// listImage returns every path of img, its layers applied in order.
func listImage(t *testing.T, img v1.Image) map[string]node {
	t.Helper()
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	listings.Lock()
	defer listings.Unlock()
	if tree, ok := listings.m[digest]; ok {
		return tree
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	tree := map[string]node{}
	for i, l := range layers {
		if err := rootfs.WalkLayer(l, func(hdr *tar.Header, r io.Reader) error {
			p := path.Clean("/" + hdr.Name)
			if strings.HasPrefix(path.Base(p), ".wh.") {
				return fmt.Errorf("whiteout %s: our images are built without any", hdr.Name)
			}
			n := node{mode: hdr.Mode & 0o7777, uid: hdr.Uid, gid: hdr.Gid}
			switch hdr.Typeflag {
			case tar.TypeDir:
				n.typ = "dir"
			case tar.TypeReg:
				n.typ = "file"
				if hdr.Size <= 1<<20 {
					var err error
					if n.body, err = io.ReadAll(r); err != nil {
						return err
					}
				}
			case tar.TypeSymlink:
				n.typ = "symlink"
			default:
				n.typ = fmt.Sprintf("type-%c", hdr.Typeflag)
			}
			if c, ok := hdr.PAXRecords[imagebuild.CapabilityXattr]; ok {
				if c != string(imagebuild.NetBindServiceCapability()) {
					t.Errorf("%s: security.capability %x; only cap_net_bind_service=ep is expected", p, c)
				}
				n.caps = true
			}
			if p != "/" {
				tree[p] = n
			}
			return nil
		}); err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
	}
	listings.m[digest] = tree
	return tree
}

// fixture is layout.txt: exact paths, and trees ("PATH/**") whose every
// file has the given mode and owner and every folder is 0755 with it.
type fixture struct {
	paths map[string]string // path -> "file 0644 0:0"
	trees map[string]string // "PATH/**" -> "file 0644 0:0"
}

func readFixture(t *testing.T) fixture {
	t.Helper()
	f, err := os.Open(filepath.Join(distroless, "layout.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fx := fixture{paths: map[string]string{}, trees: map[string]string{}}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) != 4 {
			t.Fatalf("layout.txt:%d: %q; want PATH TYPE MODE OWNER", line, sc.Text())
		}
		if fields[1] == "tree" {
			fx.trees[fields[0]] = strings.Join(append([]string{"file"}, fields[2:]...), " ")
			continue
		}
		fx.paths[fields[0]] = strings.Join(fields[1:], " ")
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return fx
}

// difference is one way an image differs from the fixture.
type difference struct{ kind, path, text string }

// compare lists how ours differs from fx, in path order.
func compare(fx fixture, ours map[string]node) []difference {
	var diffs []difference
	treeOf := func(p string) (string, bool) {
		for tr := range fx.trees {
			if under(p, tr) {
				return tr, true
			}
		}
		return "", false
	}
	for p, want := range fx.paths {
		n, ok := ours[p]
		switch {
		case !ok:
			diffs = append(diffs, difference{"missing", p, fmt.Sprintf("only in distroless: %s %s", p, want)})
		case n.String() != want:
			diffs = append(diffs, difference{"differs", p, fmt.Sprintf("%s: ours %s, distroless %s", p, n, want)})
		}
	}
	for tr, want := range fx.trees {
		found := false
		for p := range ours {
			found = found || under(p, tr)
		}
		if !found {
			diffs = append(diffs, difference{"missing", tr, fmt.Sprintf("only in distroless: %s (%s)", tr, want)})
		}
	}
	for p, n := range ours {
		if _, exact := fx.paths[p]; exact {
			continue
		}
		tr, ok := treeOf(p)
		if !ok {
			diffs = append(diffs, difference{"extra", p, fmt.Sprintf("only in ours: %s %s", p, n)})
			continue
		}
		want := fx.trees[tr]
		if n.typ == "dir" {
			want = "dir 0755 " + strings.Fields(want)[2]
		}
		if n.typ != "symlink" && n.String() != want {
			diffs = append(diffs, difference{"differs", p, fmt.Sprintf("%s: ours %s, distroless's %s holds %s", p, n, tr, want)})
		}
	}
	for name, body := range fixtureContents(fx) {
		n, ok := ours[name]
		if ok && n.typ == "file" && !slices.Equal(effectiveLines(n.body), effectiveLines(body)) {
			diffs = append(diffs, difference{"differs", name, fmt.Sprintf("content of %s: ours\n%s\ndistroless\n%s", name, n.body, body)})
		}
	}
	slices.SortFunc(diffs, func(a, b difference) int { return strings.Compare(a.path+a.kind, b.path+b.kind) })
	return diffs
}

// under reports whether p is tree ("PATH/**") or inside it.
func under(p, tree string) bool {
	root := strings.TrimSuffix(tree, "/**")
	return p == root || strings.HasPrefix(p, root+"/")
}

// fixtureContents returns the fixture's files of exact contents, by their
// path in the image.
func fixtureContents(fx fixture) map[string][]byte {
	out := map[string][]byte{}
	for p := range fx.paths {
		if b, err := os.ReadFile(filepath.Join(distroless, filepath.FromSlash(p))); err == nil {
			out[p] = b
		}
	}
	return out
}

// effectiveLines are the lines of a configuration file that say something:
// not blank, not a comment.
func effectiveLines(b []byte) []string {
	var lines []string
	for l := range strings.Lines(string(b)) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
	}
	return lines
}

// matches reports whether d is what dec declares.
func (dec declared) matches(d difference) bool {
	if dec.kind != d.kind {
		return false
	}
	switch {
	case dec.pattern == "*":
		return true
	case strings.HasSuffix(dec.pattern, "/**"):
		return under(d.path, dec.pattern)
	}
	return d.path == dec.pattern
}

// madeImages returns the per-platform images of what `make images` wrote
// for im, by platform ("linux/amd64").
func madeImages(t *testing.T, im image) map[string]v1.Image {
	t.Helper()
	spec, _ := specOf(t, im)
	idx, _ := namedIndex(t, madeOutput(t, spec).Layout, spec)
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	imgs := map[string]v1.Image{}
	for _, desc := range m.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		imgs[desc.Platform.OS+"/"+desc.Platform.Architecture] = img
	}
	return imgs
}

// TestImagesMatchTheDistrolessLayout lists the files, modes and owners of
// both images, on every platform, and compares them with the fixture of
// distroless's static-debian12:nonroot. Every difference is named; those
// not in deliberate, and deliberate ones that no longer exist, fail.
func TestImagesMatchTheDistrolessLayout(t *testing.T) {
	fx := readFixture(t)
	for _, im := range images {
		t.Run(im.binary, func(t *testing.T) {
			for platform, img := range madeImages(t, im) {
				t.Run(platform, func(t *testing.T) {
					ours := listImage(t, img)
					logListing(t, fx, ours)
					used := map[int]bool{}
					var undeclared []string
					for _, d := range compare(fx, ours) {
						i := slices.IndexFunc(deliberate[im.binary], func(dec declared) bool { return dec.matches(d) })
						if i < 0 {
							undeclared = append(undeclared, d.text)
							continue
						}
						used[i] = true
					}
					if len(undeclared) > 0 {
						t.Errorf("%d differences from distroless static-debian12:nonroot that %s does not declare:\n  %s",
							len(undeclared), im.binary, strings.Join(undeclared, "\n  "))
					}
					for i, dec := range deliberate[im.binary] {
						if !used[i] {
							t.Errorf("declared difference %s %s (%s) is gone: drop it from deliberate", dec.kind, dec.pattern, dec.reason)
						}
					}
				})
			}
		})
	}
}

// logListing logs what the image holds, a tree of the fixture as one line.
func logListing(t *testing.T, fx fixture, ours map[string]node) {
	t.Helper()
	inTree := map[string]int{}
	var lines []string
	for _, p := range slices.Sorted(maps.Keys(ours)) {
		tree := ""
		for tr := range fx.trees {
			if under(p, tr) {
				tree = tr
			}
		}
		if _, exact := fx.paths[p]; tree != "" && !exact {
			inTree[tree]++
			continue
		}
		lines = append(lines, p+" "+ours[p].String())
	}
	for tr, n := range inTree {
		lines = append(lines, tr+" "+strconv.Itoa(n)+" more entries")
	}
	t.Logf("image holds:\n  %s", strings.Join(lines, "\n  "))
}

// TestCABundleParsesIntoAPoolOfAtLeast100Roots reads the coredns image's
// CA bundle: every block a CA certificate, at least 100 of them, among them
// the roots the public DNS-over-TLS resolvers and Let's Encrypt chain to.
func TestCABundleParsesIntoAPoolOfAtLeast100Roots(t *testing.T) {
	for platform, img := range madeImages(t, images[0]) {
		t.Run(platform, func(t *testing.T) {
			n, ok := listImage(t, img)[imagebuild.CABundlePath]
			if !ok {
				t.Fatalf("no %s in the image", imagebuild.CABundlePath)
			}
			var subjects []string
			rest := n.body
			for {
				var b *pem.Block
				if b, rest = pem.Decode(rest); b == nil {
					break
				}
				cert, err := x509.ParseCertificate(b.Bytes)
				if err != nil || b.Type != "CERTIFICATE" || !cert.IsCA {
					t.Fatalf("block %d (%s): %v; want a CA certificate", len(subjects), b.Type, err)
				}
				subjects = append(subjects, cert.Subject.CommonName)
			}
			if len(bytes.TrimSpace(rest)) > 0 {
				t.Errorf("%d bytes after the last PEM block", len(rest))
			}
			if len(subjects) < 100 {
				t.Errorf("%d roots; want at least 100", len(subjects))
			}
			if !x509.NewCertPool().AppendCertsFromPEM(n.body) {
				t.Errorf("x509.CertPool.AppendCertsFromPEM takes none of the bundle")
			}
			for _, want := range []string{"ISRG Root X1", "GTS Root R1", "DigiCert Global Root G2"} {
				if !slices.Contains(subjects, want) {
					t.Errorf("no %q among the %d roots", want, len(subjects))
				}
			}
		})
	}
}
