package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/coredns-hairpin/hairpin/build/images/imagebuild"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// Where the docs install the chart from: the released chart, or a checkout.
const (
	releasedChart = "oci://ghcr.io/coredns-hairpin/charts/coredns-hairpin"
	checkoutChart = "manifests/coredns-hairpin"
)

// docCommand is one helm command of the docs.
type docCommand struct {
	where string // file:line
	words []string
}

// exampleCommand finds the commands in the header comments of the chart's
// examples: "#   helm install ...", continued with "\".
var exampleCommand = regexp.MustCompile(`(?m)^#\s+(helm(?:[^\n]*\\\n#)*[^\n]*)`)

// documentedHelmCommands returns every helm command of the docs and of the
// examples' comments that works on our chart (released or checked out).
func documentedHelmCommands(t testing.TB) []docCommand {
	t.Helper()
	var cmds []docCommand
	add := func(where, text string) {
		words, err := harness.ShellWords(text)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if len(words) < 2 || words[0] != "helm" {
			return
		}
		if slices.Contains(words, releasedChart) || slices.Contains(words, checkoutChart) {
			cmds = append(cmds, docCommand{where: where, words: words})
		}
	}
	for _, f := range docFiles(t) {
		for _, b := range harness.CodeBlocks(readDoc(t, f)) {
			if !b.IsShell() {
				continue
			}
			for _, c := range harness.ShellCommands(b.Body) {
				add(fmt.Sprintf("%s:%d", f, b.Line+1+c.Line), c.Text)
			}
		}
	}
	examples, err := filepath.Glob(filepath.Join(chartDir(t), "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range examples {
		b, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range exampleCommand.FindAllStringSubmatch(string(b), -1) {
			text := regexp.MustCompile(`\n#\s*`).ReplaceAllString(m[1], "\n")
			rel, _ := filepath.Rel(repoDir(t), e)
			add(rel, text)
		}
	}
	return cmds
}

// helmValueFlags are the helm flags the docs give that take a value.
var helmValueFlags = []string{"-n", "--namespace", "-f", "--values", "--set", "--set-json", "--set-string", "--version", "--kubeconfig"}

// renderArgs turns a documented install, upgrade or template command into
// `helm template` of the chart in this checkout with the same values (lint
// stays lint). The documented --version must be the chart's: the docs
// install the release this checkout is. An upgrade with --reuse-values
// gets the default target's zones first, as the install before it had.
func (c docCommand) renderArgs(t testing.TB, chartVersion string) ([]string, error) {
	t.Helper()
	verb := c.words[1]
	var positional, flags []string
	version := ""
	for i := 2; i < len(c.words); i++ {
		w := c.words[i]
		name, val, hasVal := strings.Cut(w, "=")
		if !strings.HasPrefix(w, "-") {
			positional = append(positional, w)
			continue
		}
		if slices.Contains(helmValueFlags, name) {
			if !hasVal {
				if i+1 >= len(c.words) {
					return nil, fmt.Errorf("%s takes a value", name)
				}
				i++
				val = c.words[i]
			}
			switch name {
			case "--version":
				version = val
				continue
			case "-f", "--values":
				// A file of the release's tag, as the docs give it for
				// the OCI chart, is the file of this checkout.
				val = strings.TrimPrefix(val, "https://raw.githubusercontent.com/coredns-hairpin/hairpin/"+appVersionOf(chartVersion)+"/")
				val = filepath.Join(repoDir(t), val)
				if _, err := os.Stat(val); err != nil {
					return nil, fmt.Errorf("values file: %w", err)
				}
			case "-n":
				name = "--namespace"
			}
			flags = append(flags, name, val)
			continue
		}
		switch name {
		case "--create-namespace", "--wait", "--atomic", "--strict":
		case "--reuse-values", "--reset-then-reuse-values":
			flags = append([]string{"--set-json", defaultZones}, flags...)
		default:
			return nil, fmt.Errorf("flag %s: not one the docs are expected to use", w)
		}
	}
	chartIdx := 1
	args := []string{"template"}
	switch verb {
	case "install", "upgrade", "template":
	case "lint":
		chartIdx = 0
		args = []string{"lint", "--strict"}
	default:
		return nil, fmt.Errorf("helm %s: not a command that renders the chart", verb)
	}
	if len(positional) != chartIdx+1 {
		return nil, fmt.Errorf("want %d positional arguments, got %q", chartIdx+1, positional)
	}
	switch positional[chartIdx] {
	case releasedChart:
		if version != chartVersion {
			return nil, fmt.Errorf("installs %s --version %q; the chart is version %q", releasedChart, version, chartVersion)
		}
	case checkoutChart:
		if version != "" {
			return nil, fmt.Errorf("--version %q on a chart folder", version)
		}
	}
	if chartIdx == 1 {
		args = append(args, positional[0])
	}
	args = append(args, chartDir(t))
	return append(args, flags...), nil
}

// appVersionOf is the appVersion of chart version v: the images and the
// release's tag are v-prefixed.
func appVersionOf(v string) string { return "v" + v }

// chartMeta returns the chart's version and appVersion.
func chartMeta(t testing.TB) (version, appVersion string) {
	t.Helper()
	c := readYAML(t, filepath.Join(chartDir(t), "Chart.yaml"))
	version, _ = c["version"].(string)
	appVersion, _ = c["appVersion"].(string)
	if version == "" || appVersion == "" {
		t.Fatalf("Chart.yaml: version %q appVersion %q", version, appVersion)
	}
	return version, appVersion
}

// TestDocumentedHelmCommandsRender runs every helm command the docs and
// the examples give for our chart, as `helm template` of this checkout's
// chart with the same flags and values files: each must render. A
// documented --set the schema refuses, a values file that is not there or
// a --version that is not the chart's fails here.
func TestDocumentedHelmCommandsRender(t *testing.T) {
	h := harness.RequireHelm(t)
	version, _ := chartMeta(t)
	cmds := documentedHelmCommands(t)
	if len(cmds) < 10 {
		t.Fatalf("found %d helm commands in the docs; the extraction is broken", len(cmds))
	}
	for _, c := range cmds {
		t.Run(c.where, func(t *testing.T) {
			args, err := c.renderArgs(t, version)
			if err != nil {
				t.Fatalf("%s: %v", strings.Join(c.words, " "), err)
			}
			if out, err := h.Run(t.Context(), args...); err != nil {
				t.Errorf("%s does not render:\n%v\n%.1000s", strings.Join(c.words, " "), err, out)
			}
		})
	}
}

// imageRef finds our images and chart named anywhere: REGISTRY/NAME[:TAG].
var imageRef = regexp.MustCompile(`ghcr\.io/coredns-hairpin/([a-z0-9/-]+)(?::(v?[0-9][0-9A-Za-z.-]*))?`)

// TestDocumentedImagesAreWhatReleasesPush checks every reference to our
// registry in the docs, the examples and the chart: it names an image that
// `make images` builds (or the chart), with the chart's appVersion as the
// image tag and its version as the chart tag; and the chart's default
// repositories are those images, so that `make images VERSION=<appVersion>`
// and `make release` produce exactly what the docs pull.
func TestDocumentedImagesAreWhatReleasesPush(t *testing.T) {
	version, appVersion := chartMeta(t)
	images := map[string]string{}
	for _, s := range []imagebuild.Spec{imagebuild.CoreDNS("", appVersion), imagebuild.Proxy("", appVersion)} {
		if s.Repository != "ghcr.io/coredns-hairpin" {
			t.Fatalf("imagebuild tags under %s; the docs name ghcr.io/coredns-hairpin", s.Repository)
		}
		images[s.Name] = s.Tag()
	}
	files := docFiles(t)
	err := filepath.WalkDir(chartDir(t), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(repoDir(t), path)
		if !slices.Contains(files, rel) {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range files {
		for _, m := range imageRef.FindAllStringSubmatch(readDoc(t, f), -1) {
			seen++
			name, tag := m[1], m[2]
			switch {
			case name == "charts/coredns-hairpin":
				if tag != "" && tag != version {
					t.Errorf("%s: %s: the chart is version %s", f, m[0], version)
				}
			case images[name] != "":
				if tag != "" && "ghcr.io/coredns-hairpin/"+name+":"+tag != images[name] {
					t.Errorf("%s: %s; `make images VERSION=%s` builds %s", f, m[0], appVersion, images[name])
				}
			case name == "hairpin":
				// github.com/coredns-hairpin/hairpin is the repository, not an image.
			default:
				t.Errorf("%s: %s names no image we build (%v)", f, m[0], images)
			}
		}
	}
	if seen < 10 {
		t.Errorf("found %d references to ghcr.io/coredns-hairpin; the scan is broken", seen)
	}
	v := readYAML(t, filepath.Join(chartDir(t), "values.yaml"))
	for key, img := range map[string]string{"proxy": "hairpin-proxy", "tenant": "coredns"} {
		repo, _ := v[key].(map[string]any)["image"].(map[string]any)["repository"].(string)
		if want, _, _ := strings.Cut(images[img], ":"+appVersion); repo != want {
			t.Errorf("values %s.image.repository %q; make images builds %s", key, repo, want)
		}
	}
}

// TestReleasedChartInstallsNameFilesAUserHas (issue 34, 13): a documented
// helm command that installs the released chart takes its values files
// from the release (a URL of the release's tag), not from a checkout's
// manifests/ folder, which a user of the OCI chart does not have.
func TestReleasedChartInstallsNameFilesAUserHas(t *testing.T) {
	for _, c := range documentedHelmCommands(t) {
		if !slices.Contains(c.words, releasedChart) {
			continue
		}
		for i, w := range c.words {
			if (w == "-f" || w == "--values") && i+1 < len(c.words) && !strings.HasPrefix(c.words[i+1], "https://") {
				t.Errorf("%s: %s -f %s: a values file of a checkout with the released chart; give the release's URL (https://raw.githubusercontent.com/coredns-hairpin/hairpin/vX.Y.Z/...)", c.where, releasedChart, c.words[i+1])
			}
		}
	}
}
