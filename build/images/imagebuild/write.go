package imagebuild

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// RefNameAnnotation is the OCI annotation of an index.json entry that names
// it; skopeo's oci:DIR:NAME and crane read it.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// Output is what Write wrote for one image.
type Output struct {
	// Layout is an OCI image layout folder whose index.json holds the image
	// index, named by its tag (RefNameAnnotation): push it with
	// `skopeo copy --all oci:LAYOUT:TAG docker://REF` or
	// `crane push --index LAYOUT REF`.
	Layout string
	// DockerTarballs are `docker load` tarballs, one per platform (docker
	// load takes one image per tag), keyed by "OS/ARCH".
	DockerTarballs map[string]string
}

// Write builds the image index of s into dir: the OCI layout dir/NAME/ and
// one docker-load tarball dir/NAME-OS-ARCH.tar per platform, each tagged
// s.Tag(). Every file is written under a temporary name and renamed, so a
// reader never sees a half-written image.
func Write(s Spec, dir string) (Output, error) {
	tag, err := name.NewTag(s.Tag(), name.StrictValidation)
	if err != nil {
		return Output{}, fmt.Errorf("image %s: tag: %w", s.Name, err)
	}
	idx, err := Index(s)
	if err != nil {
		return Output{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Output{}, fmt.Errorf("image %s: %w", s.Name, err)
	}
	out := Output{Layout: filepath.Join(dir, s.Name), DockerTarballs: map[string]string{}}

	tmp := out.Layout + ".tmp"
	os.RemoveAll(tmp)
	lp, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return Output{}, fmt.Errorf("image %s: layout: %w", s.Name, err)
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefNameAnnotation: tag.TagStr()})); err != nil {
		os.RemoveAll(tmp)
		return Output{}, fmt.Errorf("image %s: layout: %w", s.Name, err)
	}
	if err := os.RemoveAll(out.Layout); err != nil {
		return Output{}, fmt.Errorf("image %s: %w", s.Name, err)
	}
	if err := os.Rename(tmp, out.Layout); err != nil {
		return Output{}, fmt.Errorf("image %s: %w", s.Name, err)
	}

	manifest, err := idx.IndexManifest()
	if err != nil {
		return Output{}, fmt.Errorf("image %s: %w", s.Name, err)
	}
	for _, desc := range manifest.Manifests {
		img, err := idx.Image(desc.Digest)
		if err != nil {
			return Output{}, fmt.Errorf("image %s: %w", s.Name, err)
		}
		p := desc.Platform
		path := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.tar", s.Name, p.OS, p.Architecture))
		if err := writeTarball(path, tag, img); err != nil {
			return Output{}, fmt.Errorf("image %s %s: %w", s.Name, p, err)
		}
		out.DockerTarballs[p.OS+"/"+p.Architecture] = path
	}
	return out, nil
}

// writeTarball writes img tagged tag to path as a docker-load tarball.
func writeTarball(path string, tag name.Tag, img v1.Image) error {
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}
