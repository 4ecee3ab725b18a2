package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/coredns-hairpin/hairpin/build/images/imagebuild"
)

// pushed is one image index in the registry.
type pushed struct {
	Ref    string `json:"ref"`    // REGISTRY/NAME:TAG
	Repo   string `json:"repo"`   // REGISTRY/NAME
	Digest string `json:"digest"` // of the index
}

// imageNames are the images of a release, as `make images` names their
// layouts (imagebuild's specs).
var imageNames = []string{imagebuild.CoreDNS("", "").Name, imagebuild.Proxy("", "").Name}

// layoutIndex returns the image index of the OCI layout dir/NAME that
// `make images` wrote for v: the one entry of its index.json, named with
// v's tag, so that images of another version are never pushed as v.
func layoutIndex(dir, imageName string, v version) (v1.ImageIndex, error) {
	path := filepath.Join(dir, imageName)
	lp, err := layout.FromPath(path)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w; run `make images VERSION=%s`", imageName, err, v)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("image %s: %s: %w", imageName, path, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image %s: %s: %w", imageName, path, err)
	}
	want := imagebuild.TagFor(v.Tag())
	var names []string
	for _, d := range m.Manifests {
		ref := d.Annotations[imagebuild.RefNameAnnotation]
		if ref != want {
			names = append(names, ref)
			continue
		}
		if !d.MediaType.IsIndex() {
			return nil, fmt.Errorf("image %s: %s holds %s as %s, not an image index", imageName, path, ref, d.MediaType)
		}
		return top.ImageIndex(d.Digest)
	}
	return nil, fmt.Errorf("image %s: %s holds %q, not %q; run `make images VERSION=%s`", imageName, path, names, want, v)
}

// image is one image index of the release, read from its layout.
type image struct {
	index v1.ImageIndex
	pushed
}

// loadImages reads the image index of every image from the layouts under
// dir and names where each goes: REGISTRY/NAME:TAG, and its digest, which
// the chart pins before anything is pushed.
func loadImages(dir string, reg registry, v version) (map[string]image, error) {
	out := map[string]image{}
	for _, n := range imageNames {
		idx, err := layoutIndex(dir, n, v)
		if err != nil {
			return nil, err
		}
		ref, err := reg.ref(n, imagebuild.TagFor(v.Tag()))
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", n, err)
		}
		digest, err := idx.Digest()
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", n, err)
		}
		out[n] = image{index: idx, pushed: pushed{Ref: ref.String(), Repo: ref.Context().String(), Digest: digest.String()}}
	}
	return out, nil
}

// pushImages pushes every image index to its REGISTRY/NAME:TAG.
func pushImages(ctx context.Context, reg registry, images map[string]image) error {
	for _, n := range imageNames {
		im := images[n]
		ref, err := name.NewTag(im.Ref, reg.nameOptions()...)
		if err != nil {
			return fmt.Errorf("image %s: %w", n, err)
		}
		if err := remote.WriteIndex(ref, im.index, remoteOptions(ctx)...); err != nil {
			return fmt.Errorf("image %s: push %s: %w", n, ref, err)
		}
		fmt.Printf("release: pushed %s@%s\n", im.Ref, im.Digest)
	}
	return nil
}
