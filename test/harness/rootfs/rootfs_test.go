package rootfs_test

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sys/unix"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/rootfs"
)

// capability is what `setcap cap_net_bind_service=+ep` writes.
const capability = "\x01\x00\x00\x02\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"

// entry is one tar entry of a test layer.
type entry struct {
	name, link string
	typ        byte
	mode       int64
	uid, gid   int
	body       string
	pax        map[string]string
}

func dir(name string, mode int64, uid int) entry {
	return entry{name: name, typ: tar.TypeDir, mode: mode, uid: uid, gid: uid}
}

func file(name string, mode int64, uid int, body string) entry {
	return entry{name: name, typ: tar.TypeReg, mode: mode, uid: uid, gid: uid, body: body}
}

func symlink(name, target string) entry {
	return entry{name: name, typ: tar.TypeSymlink, link: target, mode: 0o777}
}

func hardlink(name, target string) entry {
	return entry{name: name, typ: tar.TypeLink, link: target, mode: 0o644}
}

// want is what one path of the unpacked rootfs must be; a zero want means
// the path must not exist.
type want struct {
	typ      fs.FileMode // fs.ModeDir, fs.ModeSymlink or 0 (regular)
	mode     fs.FileMode // permission, setuid/setgid and sticky bits
	uid, gid int
	body     string // regular files
	link     string // symlinks
	caps     string // security.capability
	absent   bool
}

func TestUnpackImage(t *testing.T) {
	harness.RequireRoot(t, "unpacking an image keeps owners and file capabilities")
	tests := []struct {
		name   string
		layers [][]entry
		want   map[string]want
		err    string // a substring of the error; the unpack must fail
	}{
		{
			name: "modes, owners, links and the file capability are kept",
			layers: [][]entry{{
				dir("tmp", 0o1777, 0),
				dir("home/nonroot", 0o700, 65532),
				file("etc/passwd", 0o644, 0, "root:x:0:0::/root:/sbin/nologin\n"),
				{name: "coredns", typ: tar.TypeReg, mode: 0o755, body: "ELF", pax: map[string]string{"SCHILY.xattr.security.capability": capability}},
				file("usr/bin/su", 0o4755, 0, "setuid"),
				symlink("etc/localtime", "/usr/share/zoneinfo/UTC"),
				hardlink("etc/passwd-", "etc/passwd"),
			}},
			want: map[string]want{
				"tmp":           {typ: fs.ModeDir, mode: 0o777 | fs.ModeSticky},
				"home":          {typ: fs.ModeDir, mode: 0o755},
				"home/nonroot":  {typ: fs.ModeDir, mode: 0o700, uid: 65532, gid: 65532},
				"etc/passwd":    {mode: 0o644, body: "root:x:0:0::/root:/sbin/nologin\n"},
				"etc/passwd-":   {mode: 0o644, body: "root:x:0:0::/root:/sbin/nologin\n"},
				"coredns":       {mode: 0o755, body: "ELF", caps: capability},
				"usr/bin/su":    {mode: 0o755 | fs.ModeSetuid, body: "setuid"},
				"etc/localtime": {typ: fs.ModeSymlink, mode: 0o777, link: "/usr/share/zoneinfo/UTC"},
			},
		},
		{
			name: "a later layer replaces, whites out and makes opaque",
			layers: [][]entry{
				{
					file("etc/a", 0o644, 0, "lower"),
					file("etc/gone", 0o644, 0, "lower"),
					file("opaque/lower", 0o644, 0, "lower"),
					dir("became-file", 0o755, 0),
					file("became-file/x", 0o644, 0, "lower"),
					file("became-dir", 0o644, 0, "lower"),
					dir("kept", 0o755, 0),
					file("kept/lower", 0o644, 0, "lower"),
					file("opaque2/sub/lower", 0o644, 0, "lower"),
				},
				{
					file("etc/a", 0o600, 65532, "upper"),
					file("etc/.wh.gone", 0, 0, ""),
					file("opaque/upper", 0o644, 0, "upper"),
					file("opaque/.wh..wh..opq", 0, 0, ""),
					file("became-file", 0o644, 0, "upper"),
					dir("became-dir", 0o750, 0),
					dir("kept", 0o700, 65532),
					dir("opaque2/sub", 0o755, 0),
					file("opaque2/sub/upper", 0o644, 0, "upper"),
					file("opaque2/.wh..wh..opq", 0, 0, ""),
				},
			},
			want: map[string]want{
				"etc/a":         {mode: 0o600, uid: 65532, gid: 65532, body: "upper"},
				"etc/gone":      {absent: true},
				"etc/.wh.gone":  {absent: true},
				"opaque/lower":  {absent: true},
				"opaque/upper":  {mode: 0o644, body: "upper"},
				"became-file":   {mode: 0o644, body: "upper"},
				"became-file/x": {absent: true},
				"became-dir":    {typ: fs.ModeDir, mode: 0o750},
				"kept":          {typ: fs.ModeDir, mode: 0o700, uid: 65532, gid: 65532},
				"kept/lower":    {mode: 0o644, body: "lower"},
				// The folder this layer wrote stays; what a lower one put in it goes.
				"opaque2/sub/lower": {absent: true},
				"opaque2/sub/upper": {mode: 0o644, body: "upper"},
			},
		},
		{
			name:   "the image's ./ entry sets the rootfs' own mode",
			layers: [][]entry{{dir("./", 0o750, 0), file("./etc/hosts", 0o644, 0, "")}},
			want:   map[string]want{".": {typ: fs.ModeDir, mode: 0o750}, "etc/hosts": {mode: 0o644}},
		},
		{
			name:   "a ./ entry that is not a folder is refused",
			layers: [][]entry{{file(".", 0o644, 0, "x")}},
			err:    "the rootfs itself can only be a folder",
		},
		{
			name:   "a name climbing out with .. is refused",
			layers: [][]entry{{file("../escaped", 0o644, 0, "x")}},
			err:    `entry "../escaped": path escapes the rootfs`,
		},
		{
			name:   "a name climbing out in its middle is refused",
			layers: [][]entry{{file("etc/../../escaped", 0o644, 0, "x")}},
			err:    `entry "etc/../../escaped": path escapes the rootfs`,
		},
		{
			name:   "a file through an absolute symlink is refused",
			layers: [][]entry{{symlink("etc", "/"), file("etc/escaped", 0o644, 0, "x")}},
			err:    "etc/escaped:",
		},
		{
			name:   "a file through a relative symlink out of the rootfs is refused",
			layers: [][]entry{{symlink("up", "../.."), file("up/escaped", 0o644, 0, "x")}},
			err:    "up/escaped:",
		},
		{
			name:   "a symlink of a lower layer is not followed out either",
			layers: [][]entry{{symlink("etc", "/")}, {file("etc/escaped", 0o644, 0, "x")}},
			err:    "layer 1: etc/escaped:",
		},
		{
			name:   "a hard link to outside is refused",
			layers: [][]entry{{hardlink("passwd", "../../escaped")}},
			err:    `entry "../../escaped": path escapes the rootfs`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			// The rootfs sits two levels down, so that "../.." from it is
			// still inside base, where the test can see what escaped.
			rootDir := filepath.Join(base, "a", "rootfs")
			if err := os.MkdirAll(rootDir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(base, "escaped"), []byte("outside"), 0o644); err != nil {
				t.Fatal(err)
			}
			lp := writeLayout(t, map[string][][]entry{"amd64": tt.layers})
			_, err := rootfs.Unpack(lp, "amd64", rootDir)
			if body, _ := os.ReadFile(filepath.Join(base, "escaped")); string(body) != "outside" {
				t.Errorf("a file outside the rootfs was written: %q", body)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("UnpackImage error %v; want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range tt.want {
				checkPath(t, filepath.Join(rootDir, name), w)
			}
		})
	}
}

func TestUnpackImagePicksTheArchitectureAndReturnsItsConfig(t *testing.T) {
	harness.RequireRoot(t, "unpacking an image keeps owners and file capabilities")
	lp := writeLayout(t, map[string][][]entry{
		"amd64": {{file("arch", 0o644, 0, "amd64")}},
		"arm64": {{file("arch", 0o644, 0, "arm64")}},
	})
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			r, err := rootfs.Unpack(lp, arch, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			checkPath(t, filepath.Join(r.Dir, "arch"), want{mode: 0o644, body: arch})
			if !slices.Equal(r.Entrypoint, []string{"/bin"}) || !slices.Equal(r.Cmd, []string{"-x"}) ||
				!slices.Equal(r.Env, []string{"A=b"}) || r.User != "65532:65532" || r.WorkingDir != "/w" ||
				!slices.Equal(r.ExposedPorts, []string{"53/tcp", "53/udp"}) {
				t.Errorf("config %+v; want the image's", r)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		_, err := rootfs.Unpack(lp, "riscv64", t.TempDir())
		if err == nil || !strings.HasSuffix(err.Error(), ": no linux/riscv64 image (found: linux/amd64, linux/arm64)") {
			t.Fatalf("error %v; want one naming the missing and the found platforms", err)
		}
	})
}

// writeLayout writes an OCI layout with one image index holding one image
// per architecture, each with the given layers.
func writeLayout(t *testing.T, arches map[string][][]entry) string {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range slices.Sorted(maps.Keys(arches)) {
		img, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), &v1.ConfigFile{
			OS: "linux", Architecture: arch,
			Config: v1.Config{
				Entrypoint: []string{"/bin"}, Cmd: []string{"-x"}, Env: []string{"A=b"}, User: "65532:65532", WorkingDir: "/w",
				ExposedPorts: map[string]struct{}{"53/udp": {}, "53/tcp": {}},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, entries := range arches[arch] {
			if img, err = mutate.AppendLayers(img, layer(t, entries)); err != nil {
				t.Fatal(err)
			}
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	dir := t.TempDir()
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendIndex(idx); err != nil {
		t.Fatal(err)
	}
	return dir
}

func layer(t *testing.T, entries []entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Uid: e.uid, Gid: e.gid, Size: int64(len(e.body)), PAXRecords: e.pax, Format: tar.FormatPAX}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checkPath checks one path of an unpacked rootfs against w.
func checkPath(t *testing.T, path string, w want) {
	t.Helper()
	fi, err := os.Lstat(path)
	if w.absent {
		if err == nil {
			t.Errorf("%s exists; want it deleted", path)
		}
		return
	}
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	st := fi.Sys().(*syscall.Stat_t)
	if got := fi.Mode().Type(); got != w.typ {
		t.Errorf("%s: type %v; want %v", path, got, w.typ)
	}
	if got := fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky); got != w.mode {
		t.Errorf("%s: mode %v; want %v", path, got, w.mode)
	}
	if int(st.Uid) != w.uid || int(st.Gid) != w.gid {
		t.Errorf("%s: owner %d:%d; want %d:%d", path, st.Uid, st.Gid, w.uid, w.gid)
	}
	switch w.typ {
	case 0:
		if body, err := os.ReadFile(path); err != nil || string(body) != w.body {
			t.Errorf("%s: content %q (%v); want %q", path, body, err, w.body)
		}
		buf := make([]byte, 64)
		n, err := unix.Lgetxattr(path, "security.capability", buf)
		if err != nil {
			n = 0
		}
		if got := string(buf[:n]); got != w.caps {
			t.Errorf("%s: security.capability %x; want %x", path, got, w.caps)
		}
	case fs.ModeSymlink:
		if got, err := os.Readlink(path); err != nil || got != w.link {
			t.Errorf("%s: symlink to %q (%v); want %q", path, got, err, w.link)
		}
	}
}
