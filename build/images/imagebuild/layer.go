package imagebuild

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of a layer: a regular file, or a folder when Mode has
// fs.ModeDir.
type File struct {
	// Path is where it lands in the image, absolute ("/etc/passwd").
	Path string
	// Mode is the permission bits, with fs.ModeDir, fs.ModeSticky,
	// fs.ModeSetuid or fs.ModeSetgid where they apply.
	Mode fs.FileMode
	// UID and GID own it.
	UID, GID int
	// Body is a regular file's content.
	Body []byte
	// PAXRecords are extra PAX header records, e.g. CapabilityXattr.
	PAXRecords map[string]string
}

// epoch is every entry's modification time, so that the same files always
// give the same layer digest whenever and wherever they are built.
var epoch = time.Unix(0, 0).UTC()

// NewLayer returns the layer of files, written in path order (a folder
// before what it holds) with fixed modification times and no user or group
// names, so that the same files always give the same digest. Every folder
// a file sits in must be among files, so that none is left to a runtime's
// defaults; the image root ("/") is implied.
func NewLayer(files []File) (v1.Layer, error) {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	dirs := map[string]bool{"/": true}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return nil, fmt.Errorf("layer entry %q: want a clean absolute path below /", f.Path)
		}
		if i > 0 && files[i-1].Path == f.Path {
			return nil, fmt.Errorf("layer entry %s: listed twice", f.Path)
		}
		if !dirs[path.Dir(f.Path)] {
			return nil, fmt.Errorf("layer entry %s: its folder %s is not in the layer", f.Path, path.Dir(f.Path))
		}
		hdr := &tar.Header{
			Typeflag:   tar.TypeReg,
			Name:       strings.TrimPrefix(f.Path, "/"),
			Mode:       tarMode(f.Mode),
			Uid:        f.UID,
			Gid:        f.GID,
			Size:       int64(len(f.Body)),
			ModTime:    epoch,
			PAXRecords: f.PAXRecords,
			Format:     tar.FormatPAX,
		}
		if f.Mode.IsDir() {
			if len(f.Body) > 0 {
				return nil, fmt.Errorf("layer entry %s: a folder with content", f.Path)
			}
			dirs[f.Path] = true
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.Path, err)
		}
		if _, err := tw.Write(f.Body); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// tarMode is m as a tar header's mode: permission bits and the Unix
// setuid, setgid and sticky bits (c_ISUID, c_ISGID, c_ISVTX).
func tarMode(m fs.FileMode) int64 {
	t := int64(m.Perm())
	for bit, v := range map[fs.FileMode]int64{fs.ModeSetuid: 0o4000, fs.ModeSetgid: 0o2000, fs.ModeSticky: 0o1000} {
		if m&bit != 0 {
			t |= v
		}
	}
	return t
}
