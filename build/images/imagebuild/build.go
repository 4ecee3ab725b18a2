package imagebuild

import (
	"encoding/binary"
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
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

// Layer returns the binary layer of the image of s for p: p's binary at
// s.Path, mode 0755, root-owned like every file of the stock image (user
// 65532 may run it, not rewrite it), with the file capability when
// s.NetBindService, and s.License at LicensePath (0644 root). The same
// inputs always give the same digest.
func Layer(s Spec, p Platform) (v1.Layer, error) {
	bin, err := os.ReadFile(p.Binary)
	if err != nil {
		return nil, fmt.Errorf("image %s %s: %w", s.Name, p, err)
	}
	f := File{Path: s.Path, Mode: 0o755, Body: bin}
	if s.NetBindService {
		f.PAXRecords = map[string]string{CapabilityXattr: string(NetBindServiceCapability())}
	}
	files := []File{f}
	if len(s.License) > 0 {
		files = append(files, File{Path: LicensePath, Mode: 0o644, Body: s.License})
	}
	layer, err := NewLayer(files)
	if err != nil {
		return nil, fmt.Errorf("image %s %s: %w", s.Name, p, err)
	}
	return layer, nil
}

// BaseLayer returns the layer of s.Base, nil when s has none.
func BaseLayer(s Spec) (v1.Layer, error) {
	if s.Base == nil {
		return nil, nil
	}
	files, err := s.Base.Files()
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", s.Name, err)
	}
	layer, err := NewLayer(files)
	if err != nil {
		return nil, fmt.Errorf("image %s: base: %w", s.Name, err)
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
		Env:          s.Env,
		ExposedPorts: ports,
		Labels:       s.Labels(),
		WorkingDir:   "/",
	}
}

// Image builds the OCI image of s for platform p: the base layer (nil for
// none, as BaseLayer returns it) and then the binary's.
func Image(s Spec, p Platform, base v1.Layer) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: p.Arch,
		OS:           p.OS,
		Config:       Config(s),
		RootFS:       v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("image %s %s: config: %w", s.Name, p, err)
	}
	var adds []mutate.Addendum
	if base != nil {
		adds = append(adds, mutate.Addendum{
			Layer:     base,
			MediaType: types.OCILayer,
			History:   v1.History{CreatedBy: "imagebuild: base", Comment: baseComment},
		})
	}
	bin, err := Layer(s, p)
	if err != nil {
		return nil, err
	}
	adds = append(adds, mutate.Addendum{
		Layer:     bin,
		MediaType: types.OCILayer,
		History:   v1.History{CreatedBy: "imagebuild: " + s.Path, Comment: "coredns-hairpin " + s.Version},
	})
	img, err = mutate.Append(img, adds...)
	if err != nil {
		return nil, fmt.Errorf("image %s %s: %w", s.Name, p, err)
	}
	return img, nil
}

// baseComment says where the base layer's data comes from.
const baseComment = "CA bundle: golang.org/x/crypto/x509roots/fallback; timezone database: Go's lib/time/zoneinfo.zip"

// Index builds the OCI image index of s: one image per platform of
// s.Platforms, each described with its platform, so that a runtime pulls
// the one of its node.
func Index(s Spec) (v1.ImageIndex, error) {
	if len(s.Platforms) == 0 {
		return nil, fmt.Errorf("image %s: no platforms", s.Name)
	}
	base, err := BaseLayer(s)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range s.Platforms {
		img, err := Image(s, p, base)
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
