package node

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/coredns-hairpin/hairpin/test/harness/rootfs"
)

// image is an image ready to be the lower layer of container roots.
type image struct {
	ref    string
	id     string // the imageID reported in container statuses
	host   bool
	config rootfs.Rootfs // Dir is the lower layer
	paths  []string
}

// imageCache unpacks each OCI image once per node, and makes the Host
// images' skeleton once.
type imageCache struct {
	cfg    Config
	mu     sync.Mutex
	images map[string]*image
}

func newImageCache(cfg Config) *imageCache {
	return &imageCache{cfg: cfg, images: map[string]*image{}}
}

// errImagePull is an image that cannot be had.
type errImagePull struct{ msg string }

func (e *errImagePull) Error() string { return e.msg }

// get returns the image ref, unpacking it on first use.
func (ic *imageCache) get(ref string) (*image, error) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if img, ok := ic.images[ref]; ok {
		return img, nil
	}
	spec, ok := ic.cfg.Images[ref]
	if !ok {
		return nil, &errImagePull{fmt.Sprintf("image %q is not one this node can run (not in its Images)", ref)}
	}
	dir := filepath.Join(ic.cfg.Dir, "images", shortID(ref, 16))
	img := &image{ref: ref, host: spec.Host, paths: spec.HostPaths}
	if spec.Host {
		if err := hostSkeleton(dir); err != nil {
			return nil, &errImagePull{fmt.Sprintf("image %q: %v", ref, err)}
		}
		img.id = "host://" + ref
		img.config = rootfs.Rootfs{Dir: dir, Env: []string{"PATH=" + defaultPath}}
	} else {
		_ = os.RemoveAll(dir)
		r, err := rootfs.Unpack(spec.OCILayout, runtime.GOARCH, dir)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, &errImagePull{fmt.Sprintf("image %q: %v", ref, err)}
		}
		img.id = "oci-layout://" + spec.OCILayout
		img.config = *r
		img.config.Dir = dir
	}
	ic.images[ref] = img
	return img, nil
}

// defaultPath is a container's PATH when its image sets none (runc's).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// hostTop are the host's top-level entries a Host image's root shows:
// links stay links (merged /usr), directories are bound read-only.
var hostTop = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "opt"}

// hostCopyOnWrite are shown as overlays on the host's, so that a Pod can
// write and create mount points there without touching the host.
var hostCopyOnWrite = []string{"etc", "var"}

// hostSkeleton makes the lower layer of a Host image's roots: the host's
// top-level links, and empty directories for everything mounted on it.
func hostSkeleton(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range hostTop {
		fi, err := os.Lstat("/" + name)
		if err != nil {
			continue
		}
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink("/" + name)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, p); err != nil {
				return err
			}
			continue
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
	}
	dirs := map[string]os.FileMode{"etc": 0o755, "var": 0o755, "tmp": 0o1777, "run": 0o755, "root": 0o700, "home": 0o755, "proc": 0o555, "sys": 0o555, "dev": 0o755}
	for name, mode := range dirs {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, mode); err != nil {
			return err
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
	}
	return nil
}

// AddImage makes ref runnable from now on, as a runtime that has just pulled
// it: a test that builds an image after the node started (the stock CoreDNS
// of an adoption) lets Pods name it. An image already known keeps what it
// was unpacked from.
func (n *Node) AddImage(ref string, img Image) error {
	if err := img.validate(); err != nil {
		return fmt.Errorf("node: AddImage(%q): %w", ref, err)
	}
	ic := n.images
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if _, ok := ic.cfg.Images[ref]; ok {
		return nil
	}
	// The map is the caller's Config's: a copy, not a write into it.
	images := maps.Clone(ic.cfg.Images)
	if images == nil {
		images = map[string]Image{}
	}
	images[ref] = img
	ic.cfg.Images = images
	return nil
}

// validate checks that img names exactly one source.
func (img Image) validate() error {
	if (img.OCILayout == "") == !img.Host {
		return errors.New("set exactly one of OCILayout and Host")
	}
	return nil
}
