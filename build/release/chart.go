package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"go.yaml.in/yaml/v3"

	"github.com/coredns-hairpin/hairpin/build/chartdoc"
)

// imageValues is where the chart takes each image from: its values key.
var imageValues = map[string]string{"coredns": "tenant.image", "hairpin-proxy": "proxy.image"}

// chartRepo is the chart's repository under the registry.
const chartRepo = "charts"

// helm runs the helm CLI in the caller's environment (its registry login).
type helm struct{ bin string }

// run runs helm and returns its stdout; a failure carries helm's stderr.
func (h helm) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// pinChart copies the chart in src to dir/NAME and makes it the release's:
// version and appVersion from v, and default images naming what was
// pushed, by tag and digest; the README's values table is written again
// from the edited values. It returns the copy's folder.
func pinChart(src, dir string, v version, images map[string]image) (string, error) {
	dst := filepath.Join(dir, filepath.Base(src))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return "", fmt.Errorf("chart: copy %s: %w", src, err)
	}
	if err := editYAML(filepath.Join(dst, "Chart.yaml"), map[string]string{"version": v.Chart(), "appVersion": v.Tag()}); err != nil {
		return "", err
	}
	values := map[string]string{}
	for n, key := range imageValues {
		p, ok := images[n]
		if !ok {
			return "", fmt.Errorf("chart: image %s was not pushed", n)
		}
		values[key+".repository"] = p.Repo
		values[key+".tag"] = v.Tag()
		values[key+".digest"] = p.Digest
	}
	if err := editYAML(filepath.Join(dst, "values.yaml"), values); err != nil {
		return "", err
	}
	if _, err := chartdoc.Write(dst); err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	return dst, nil
}

// editYAML sets scalars of the YAML file path in place.
func editYAML(path string, values map[string]string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	out, err := setScalars(src, values)
	if err != nil {
		return fmt.Errorf("chart: %s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}

// chartName returns the name in the chart's Chart.yaml.
func chartName(chart string) (string, error) {
	b, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
	if err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	var c struct {
		Name string `yaml:"name"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil || c.Name == "" {
		return "", fmt.Errorf("chart: %s has no name (%v)", filepath.Join(chart, "Chart.yaml"), err)
	}
	return c.Name, nil
}

// lintChart runs `helm lint --strict` on chart with each of its
// ci/*-values.yaml files (the chart-testing convention): the chart as
// shipped needs a target's zones, which those files give.
func lintChart(ctx context.Context, h helm, chart string) error {
	files, err := filepath.Glob(filepath.Join(chart, "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("chart: no ci/*-values.yaml in %s to lint it with (%v)", chart, err)
	}
	for _, f := range files {
		if _, err := h.run(ctx, "lint", "--strict", chart, "--values", f); err != nil {
			return fmt.Errorf("chart: lint with %s: %w", filepath.Base(f), err)
		}
	}
	return nil
}

// packageChart packages chart into out and returns the archive.
func packageChart(ctx context.Context, h helm, chart, out string, v version) (string, error) {
	n, err := chartName(chart)
	if err != nil {
		return "", err
	}
	if _, err := h.run(ctx, "package", chart, "--destination", out); err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	archive := filepath.Join(out, n+"-"+v.Chart()+".tgz")
	if _, err := os.Stat(archive); err != nil {
		return "", fmt.Errorf("chart: helm package wrote no %s: %w", archive, err)
	}
	return archive, nil
}

// pushChart pushes the chart archive of chart to oci://REGISTRY/charts
// and returns what the registry holds.
func pushChart(ctx context.Context, h helm, reg registry, chart, archive string, v version) (pushed, error) {
	n, err := chartName(chart)
	if err != nil {
		return pushed{}, err
	}
	args := []string{"push", archive, "oci://" + reg.path + "/" + chartRepo}
	if reg.loopback {
		args = append(args, "--plain-http")
	}
	if _, err := h.run(ctx, args...); err != nil {
		return pushed{}, fmt.Errorf("chart: %w", err)
	}
	ref, err := reg.ref(chartRepo+"/"+n, v.Chart())
	if err != nil {
		return pushed{}, fmt.Errorf("chart: %w", err)
	}
	desc, err := remote.Head(ref, remoteOptions(ctx)...)
	if err != nil {
		return pushed{}, fmt.Errorf("chart: pushed, but %s does not resolve: %w", ref, err)
	}
	fmt.Printf("release: pushed oci://%s version %s (appVersion %s)@%s\n", ref.Context(), v.Chart(), v.Tag(), desc.Digest)
	return pushed{Ref: "oci://" + ref.Context().String(), Repo: ref.Context().String(), Digest: desc.Digest.String()}, nil
}
