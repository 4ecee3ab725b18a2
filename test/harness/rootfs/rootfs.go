// Package rootfs unpacks an OCI image into a folder, as a container
// runtime would. It is a leaf of the harness, so that the test node
// (test/harness/node) runs our images with it and the harness imports both.
package rootfs

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"golang.org/x/sys/unix"

	"github.com/coredns-hairpin/hairpin/test/harness/userns"
)

// Rootfs is an image unpacked into a folder, with the configuration a
// runtime starts it with.
type Rootfs struct {
	// Dir is the folder holding the image's files: chroot into it.
	Dir string
	// Entrypoint, Cmd, Env, User and WorkingDir are the image config's.
	Entrypoint, Cmd, Env []string
	User                 string
	WorkingDir           string
	// ExposedPorts are the config's "PORT/PROTO" entries, sorted.
	ExposedPorts []string
}

// Whiteout markers of the OCI layer format (image-spec layer.md,
// "Whiteouts"): ".wh.NAME" deletes NAME of the lower layers, and
// ".wh..wh..opq" in a folder deletes everything the lower layers put in it.
const (
	whiteoutPrefix = ".wh."
	whiteoutOpaque = ".wh..wh..opq"
)

// xattrPrefix is how a PAX header carries an extended attribute; the file
// capability travels as SCHILY.xattr.security.capability.
const xattrPrefix = "SCHILY.xattr."

// Unpack unpacks the linux/ARCH image of the OCI layout at layoutDir
// (what `make images` writes to bin/images/NAME/) into dir and returns its
// config. Layers are applied in order with their whiteouts, keeping modes,
// owners, symlinks, hard links and extended attributes (the
// security.capability that lets coredns bind :53 as 65532), so it must run
// as root to unpack an image as a runtime would. dir is made 0755, as a
// runtime's rootfs is, unless the image's "./" entry says otherwise. A name
// or link that would reach outside dir, through ".." or through a symlink
// (absolute or not), is an error that names the entry. Modification times
// are not kept.
func Unpack(layoutDir, arch, dir string) (*Rootfs, error) {
	lp, err := layout.FromPath(layoutDir)
	if err != nil {
		return nil, fmt.Errorf("unpack %s: %w", layoutDir, err)
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("unpack %s: %w", layoutDir, err)
	}
	img, err := platformImage(idx, "linux", arch)
	if err != nil {
		return nil, fmt.Errorf("unpack %s: %w", layoutDir, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("unpack %s: config: %w", layoutDir, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("unpack %s: %w", layoutDir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("unpack %s: %w", layoutDir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("unpack %s: %w", layoutDir, err)
	}
	defer root.Close()
	// A runtime's rootfs is 0755, so that a non-root process can walk "/",
	// unless the image's "./" entry says otherwise.
	if err := root.Chmod(".", 0o755); err != nil {
		return nil, fmt.Errorf("unpack %s: %w", layoutDir, err)
	}
	for i, l := range layers {
		if err := applyLayer(root, l); err != nil {
			return nil, fmt.Errorf("unpack %s: layer %d: %w", layoutDir, i, err)
		}
	}
	c := cf.Config
	var ports []string
	for p := range c.ExposedPorts {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	return &Rootfs{Dir: dir, Entrypoint: c.Entrypoint, Cmd: c.Cmd, Env: c.Env, User: c.User, WorkingDir: c.WorkingDir, ExposedPorts: ports}, nil
}

// platformImage finds the image for goos/arch in idx, descending into
// nested indexes (a layout's index.json names one image index per tag).
func platformImage(idx v1.ImageIndex, goos, arch string) (v1.Image, error) {
	var seen []string
	img, err := findPlatform(idx, goos, arch, &seen)
	if err == nil && img == nil {
		err = fmt.Errorf("no %s/%s image (found: %s)", goos, arch, strings.Join(seen, ", "))
	}
	return img, err
}

// findPlatform is platformImage's walk; it adds the platforms it passes
// over to seen, and returns a nil image when none matches.
func findPlatform(idx v1.ImageIndex, goos, arch string, seen *[]string) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, desc := range m.Manifests {
		switch {
		case desc.MediaType.IsIndex():
			child, err := idx.ImageIndex(desc.Digest)
			if err != nil {
				return nil, err
			}
			if img, err := findPlatform(child, goos, arch, seen); img != nil || err != nil {
				return img, err
			}
		case desc.MediaType.IsImage():
			p := desc.Platform
			if p == nil {
				img, err := idx.Image(desc.Digest)
				if err != nil {
					return nil, err
				}
				cf, err := img.ConfigFile()
				if err != nil {
					return nil, err
				}
				p = &v1.Platform{OS: cf.OS, Architecture: cf.Architecture}
			}
			if p.OS == goos && p.Architecture == arch {
				return idx.Image(desc.Digest)
			}
			*seen = append(*seen, p.OS+"/"+p.Architecture)
		}
	}
	return nil, nil
}

// applyLayer applies one layer to root in one pass. Its whiteouts delete
// only what the lower layers hold, so what this layer wrote (before or
// after its whiteout entries) is kept.
func applyLayer(root *os.Root, l v1.Layer) error {
	written := map[string]bool{}
	return eachEntry(l, func(name string, hdr *tar.Header, r io.Reader) error {
		if strings.HasPrefix(path.Base(name), whiteoutPrefix) {
			return applyWhiteout(root, name, written)
		}
		written[name] = true
		return applyEntry(root, name, hdr, r)
	})
}

// WalkLayer calls fn for every entry of l's uncompressed tarball, in
// order, with a reader of the entry's content; it stops at fn's first error.
func WalkLayer(l v1.Layer, fn func(hdr *tar.Header, r io.Reader) error) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(hdr, tr); err != nil {
			return err
		}
	}
}

// eachEntry calls fn for every entry of l with its name relative to the
// rootfs, refusing names that leave it.
func eachEntry(l v1.Layer, fn func(name string, hdr *tar.Header, r io.Reader) error) error {
	return WalkLayer(l, func(hdr *tar.Header, r io.Reader) error {
		name, err := localName(hdr.Name)
		if err != nil {
			return err
		}
		if err := fn(name, hdr, r); err != nil {
			return fmt.Errorf("%s: %w", hdr.Name, err)
		}
		return nil
	})
}

// localName turns a layer entry's name into a path relative to the rootfs
// (leading "/" and "./" dropped, as runtimes do), refusing one that climbs
// out of it.
func localName(name string) (string, error) {
	if !withinRoot(name) {
		return "", fmt.Errorf("entry %q: path escapes the rootfs", name)
	}
	if rel := strings.TrimPrefix(path.Clean("/"+name), "/"); rel != "" {
		return rel, nil
	}
	return ".", nil
}

// withinRoot reports whether walking name's elements in order never climbs
// above its start.
func withinRoot(name string) bool {
	depth := 0
	for _, e := range strings.Split(name, "/") {
		switch e {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return false
			}
		default:
			depth++
		}
	}
	return true
}

// applyWhiteout deletes what a whiteout entry names, sparing what this
// layer wrote.
func applyWhiteout(root *os.Root, name string, written map[string]bool) error {
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	switch {
	case base == whiteoutOpaque:
		return removeLower(root, dir, written)
	case strings.HasPrefix(base, whiteoutPrefix+whiteoutPrefix):
		// Other ".wh..wh." markers (aufs hard-link bookkeeping) are not files.
	default:
		if target := path.Join(dir, strings.TrimPrefix(base, whiteoutPrefix)); !written[target] {
			return root.RemoveAll(target)
		}
	}
	return nil
}

// removeLower deletes what dir holds from the lower layers: everything in it
// that this layer did not write, also below the folders it did.
func removeLower(root *os.Root, dir string, written map[string]bool) error {
	ents, err := fs.ReadDir(root.FS(), dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := path.Join(dir, e.Name())
		switch {
		case !written[p]:
			err = root.RemoveAll(p)
		case e.IsDir():
			err = removeLower(root, p, written)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// applyEntry writes one layer entry under root. What a lower layer left at
// the name is replaced, except a folder by a folder, which is kept with its
// contents and takes the new mode and owner.
func applyEntry(root *os.Root, name string, hdr *tar.Header, r io.Reader) error {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	mode := hdr.FileInfo().Mode()
	if name == "." && hdr.Typeflag != tar.TypeDir {
		return fmt.Errorf("the rootfs itself can only be a folder")
	}
	old, err := root.Lstat(name)
	if err == nil && !(old.IsDir() && hdr.Typeflag == tar.TypeDir) {
		if err := root.RemoveAll(name); err != nil {
			return err
		}
	}
	xattrs := map[string]string{}
	for k, v := range hdr.PAXRecords {
		if a, ok := strings.CutPrefix(k, xattrPrefix); ok {
			xattrs[a] = v
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := root.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		f, err := root.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		return setMeta(f, hdr, mode, xattrs)
	case tar.TypeReg:
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.Copy(f, r); err != nil {
			return err
		}
		return setMeta(f, hdr, mode, xattrs)
	case tar.TypeSymlink:
		if len(xattrs) > 0 {
			return fmt.Errorf("extended attributes on a symlink are not supported")
		}
		if err := root.Symlink(hdr.Linkname, name); err != nil {
			return err
		}
		uid, gid := userns.Owner(hdr.Uid, hdr.Gid)
		return root.Lchown(name, uid, gid)
	case tar.TypeLink:
		target, err := localName(hdr.Linkname)
		if err != nil {
			return err
		}
		return root.Link(target, name)
	default:
		return fmt.Errorf("entry type %q is not supported", hdr.Typeflag)
	}
}

// setMeta gives an open file or folder its owner, mode and extended
// attributes, in that order: a chown clears setuid bits and the file
// capability, so they come after it.
func setMeta(f *os.File, hdr *tar.Header, mode fs.FileMode, xattrs map[string]string) error {
	if err := f.Chown(userns.Owner(hdr.Uid, hdr.Gid)); err != nil {
		return err
	}
	if err := f.Chmod(mode & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(xattrs)) {
		if err := unix.Fsetxattr(int(f.Fd()), k, []byte(xattrs[k]), 0); err != nil {
			return fmt.Errorf("xattr %s: %w", k, err)
		}
	}
	return nil
}
