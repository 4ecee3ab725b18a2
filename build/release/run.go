package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// config is the command line of a release.
type config struct {
	registry, version   string
	check               bool
	images, chart, out  string
	helm, root          string
	plugin, downloadURL string
	pluginPlatforms     []pluginPlatform // default pluginPlatforms; tests use fewer
}

// summary is release.json: what was released, for the steps after it (CI
// signs each digest and attaches SBOMs to the images).
type summary struct {
	Version      string            `json:"version"`
	ChartVersion string            `json:"chartVersion"`
	Images       map[string]pushed `json:"images"`
	Chart        pushed            `json:"chart"`
	Files        []string          `json:"files"` // relative to the summary's folder
}

// run makes the release c describes.
func run(ctx context.Context, c config) error {
	reg, err := parseRegistry(c.registry)
	if err != nil {
		return err
	}
	v, err := parseVersion(c.version)
	if err != nil {
		return err
	}
	if c.check {
		return nil
	}
	if c.helm == "" {
		return errors.New("no helm: set -helm or HELM (build/tools.sh --helm)")
	}
	if c.pluginPlatforms == nil {
		c.pluginPlatforms = pluginPlatforms
	}
	license, err := licensePath(c.root)
	if err != nil {
		return err
	}
	images, err := loadImages(c.images, reg, v)
	if err != nil {
		return err
	}
	if err := resetOut(c.out); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "hairpin-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	h := helm{bin: c.helm}
	chart, err := pinChart(c.chart, tmp, v, images)
	if err != nil {
		return err
	}
	if err := addLicense(license, chart); err != nil {
		return err
	}
	if err := lintChart(ctx, h, chart); err != nil {
		return err
	}
	archive, err := packageChart(ctx, h, chart, c.out, v)
	if err != nil {
		return err
	}
	files := []string{archive}
	manifests, err := renderManifests(ctx, c.root, c.helm, chart, c.out, tmp, v)
	if err != nil {
		return err
	}
	files = append(files, manifests...)
	archives, err := buildPlugin(ctx, c.root, c.plugin, license, c.out, tmp, v, c.pluginPlatforms)
	if err != nil {
		return err
	}
	for _, a := range archives {
		files = append(files, a.Path)
	}
	if len(archives) > 0 {
		krew, err := writeKrewManifest(c.out, downloadURL(c.downloadURL, v), v, archives)
		if err != nil {
			return err
		}
		files = append(files, krew)
	}
	sums, err := writeSums(c.out, files)
	if err != nil {
		return err
	}
	files = append(files, sums)

	// Nothing is pushed before here.
	if err := pushImages(ctx, reg, images); err != nil {
		return err
	}
	pushedChart, err := pushChart(ctx, h, reg, chart, archive, v)
	if err != nil {
		return err
	}
	s := summary{Version: v.Tag(), ChartVersion: v.Chart(), Images: map[string]pushed{}, Chart: pushedChart}
	for n, im := range images {
		s.Images[n] = im.pushed
	}
	for _, f := range files {
		rel, err := filepath.Rel(c.out, f)
		if err != nil {
			return err
		}
		s.Files = append(s.Files, filepath.ToSlash(rel))
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.out, summaryFile), append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Printf("release: %s released to %s; artifacts in %s\n", v, reg.path, c.out)
	return nil
}

// summaryFile is the name of the summary in the output folder.
const summaryFile = "release.json"

// outMarker marks the output folder as a release's, which the next release
// may replace, even when the release that wrote it failed half-way.
const outMarker = ".hairpin-release"

// resetOut empties the output folder, so that no artifact of an earlier
// release is published with this one. A folder that is not empty and was
// not written by a release is refused.
func resetOut(out string) error {
	entries, err := os.ReadDir(out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(out, outMarker)); err != nil {
			return fmt.Errorf("%s is not empty and no release wrote it: not replacing it", out)
		}
		if err := os.RemoveAll(out); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, outMarker), nil, 0o644)
}
