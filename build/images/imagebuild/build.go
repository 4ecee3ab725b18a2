package imagebuild

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
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

// Layer returns the only layer of the image of s for p: p's binary at
// s.Path, mode 0755, owned by UID:GID, with a fixed modification time so
// that the same binary always gives the same layer digest.
func Layer(s Spec, p Platform) (v1.Layer, error) {
	bin, err := os.ReadFile(p.Binary)
	if err != nil {
		return nil, fmt.Errorf("image %s %s: %w", s.Name, p, err)
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
		return nil, fmt.Errorf("image %s %s: layer header: %w", s.Name, p, err)
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, fmt.Errorf("image %s %s: layer: %w", s.Name, p, err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image %s %s: layer: %w", s.Name, p, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image %s %s: layer: %w", s.Name, p, err)
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

// Image builds the OCI image of s for platform p on an empty base.
func Image(s Spec, p Platform) (v1.Image, error) {
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	base, err := mutate.ConfigFile(base, &v1.ConfigFile{
		Architecture: p.Arch,
		OS:           p.OS,
		Config:       Config(s),
		RootFS:       v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("image %s %s: config: %w", s.Name, p, err)
	}
	layer, err := Layer(s, p)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{CreatedBy: "imagebuild: " + s.Path, Comment: "coredns-hairpin " + s.Version},
	})
	if err != nil {
		return nil, fmt.Errorf("image %s %s: %w", s.Name, p, err)
	}
	return img, nil
}

// Index builds the OCI image index of s: one image per platform of
// s.Platforms, each described with its platform, so that a runtime pulls
// the one of its node.
func Index(s Spec) (v1.ImageIndex, error) {
	if len(s.Platforms) == 0 {
		return nil, fmt.Errorf("image %s: no platforms", s.Name)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range s.Platforms {
		img, err := Image(s, p)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}},
		})
	}
	return idx, nil
}
