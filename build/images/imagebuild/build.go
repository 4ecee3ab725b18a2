package imagebuild

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// CapabilityXattr is the PAX record that carries a file capability in a
// layer tarball; container runtimes set it as the security.capability
// extended attribute when they unpack the layer.
const CapabilityXattr = "SCHILY.xattr.security.capability"

// capNetBindService is CAP_NET_BIND_SERVICE's number in linux/capability.h.
const capNetBindService = 10

// NetBindServiceCapability returns the security.capability value of
// `setcap cap_net_bind_service=+ep`: a little-endian vfs_cap_data, revision
// 2, with the effective flag and the capability permitted.
func NetBindServiceCapability() []byte {
	const (
		vfsCapRevision2     = 0x02000000
		vfsCapFlagEffective = 0x000001
	)
	b := make([]byte, 20) // magic_etc, then {permitted, inheritable} x 2
	binary.LittleEndian.PutUint32(b[0:], vfsCapRevision2|vfsCapFlagEffective)
	binary.LittleEndian.PutUint32(b[4:], 1<<capNetBindService)
	return b
}

// Layer returns the image's only layer: the binary at s.Path, mode 0755,
// owned by UID:GID, with a fixed modification time so that the same binary
// always gives the same layer digest.
func Layer(s Spec) (v1.Layer, error) {
	bin, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", s.Name, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     strings.TrimPrefix(s.Path, "/"),
		Mode:     0o755,
		Uid:      UID,
		Gid:      GID,
		Size:     int64(len(bin)),
		ModTime:  time.Unix(0, 0).UTC(),
		Format:   tar.FormatPAX,
	}
	if s.NetBindService {
		hdr.PAXRecords = map[string]string{CapabilityXattr: string(NetBindServiceCapability())}
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("image %s: layer header: %w", s.Name, err)
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, fmt.Errorf("image %s: layer: %w", s.Name, err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image %s: layer: %w", s.Name, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	})
	if err != nil {
		return nil, fmt.Errorf("image %s: layer: %w", s.Name, err)
	}
	return layer, nil
}

// Config returns the image's runtime configuration.
func Config(s Spec) v1.Config {
	ports := make(map[string]struct{}, len(s.ExposedPorts))
	for _, p := range s.ExposedPorts {
		ports[p] = struct{}{}
	}
	return v1.Config{
		User:         User,
		Entrypoint:   []string{s.Path},
		ExposedPorts: ports,
		Labels:       s.Labels(),
		WorkingDir:   "/",
	}
}

// Image builds the linux/amd64 image of s on an empty base.
func Image(s Spec) (v1.Image, error) {
	base, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: "amd64",
		OS:           "linux",
		Config:       Config(s),
		RootFS:       v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("image %s: config: %w", s.Name, err)
	}
	layer, err := Layer(s)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{CreatedBy: "imagebuild: " + s.Path, Comment: "coredns-hairpin " + s.Version},
	})
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", s.Name, err)
	}
	return img, nil
}

// Write builds the image of s and writes it to dir/NAME.tar as a tarball
// that `docker load` accepts, tagged s.Tag(). It returns the file's path.
func Write(s Spec, dir string) (string, error) {
	img, err := Image(s)
	if err != nil {
		return "", err
	}
	tag, err := name.NewTag(s.Tag(), name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("image %s: tag: %w", s.Name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("image %s: %w", s.Name, err)
	}
	path := filepath.Join(dir, s.Name+".tar")
	// Write next to the target and rename, so that a reader never sees a
	// half-written tarball.
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("image %s: write %s: %w", s.Name, path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("image %s: %w", s.Name, err)
	}
	return path, nil
}
