package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// headerSets returns the --set-json flags of the helm command in the
// header comment of the chart's example name: the values the example
// leaves to the command line, such as its targets' zones.
func headerSets(t testing.TB, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir(t), "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	var sets []string
	for _, m := range exampleCommand.FindAllStringSubmatch(string(b), -1) {
		words, err := harness.ShellWords(regexp.MustCompile(`\n#\s*`).ReplaceAllString(m[1], "\n"))
		if err != nil {
			t.Fatalf("examples/%s: %v", name, err)
		}
		for i, w := range words {
			if w == "--set-json" && i+1 < len(words) {
				sets = append(sets, words[i+1])
			}
		}
	}
	return sets
}

// exampleOf returns the chart example a values file argument names
// (examples/NAME.yaml, from a checkout or the release's tag), "" for none.
func exampleOf(val string) string {
	const dir = "manifests/coredns-hairpin/examples/"
	i := strings.Index(val, dir)
	if i < 0 || strings.Contains(val[i+len(dir):], "/") {
		return ""
	}
	return val[i+len(dir):]
}

// enabledTargets returns the targets a command installs from the chart's
// default targets, the example file's and the command's own
// targets.NAME.enabled flags, sorted.
func enabledTargets(t testing.TB, example string, words []string) []string {
	t.Helper()
	enabled := map[string]bool{}
	for _, file := range []string{filepath.Join(chartDir(t), "values.yaml"), filepath.Join(chartDir(t), "examples", example)} {
		targets, _ := readYAML(t, file)["targets"].(map[string]any)
		for name, v := range targets {
			tv, _ := v.(map[string]any)
			on, set := tv["enabled"].(bool)
			enabled[name] = !set || on
		}
	}
	for i, w := range words {
		if (w == "--set" || w == "--set-json") && i+1 < len(words) {
			key, val, _ := strings.Cut(words[i+1], "=")
			if name, ok := strings.CutSuffix(strings.TrimPrefix(key, "targets."), ".enabled"); ok && strings.HasPrefix(key, "targets.") {
				enabled[name] = val == "true"
			}
		}
	}
	var names []string
	for name, on := range enabled {
		if on {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// TestExampleInstallsSetZonesOnTheCommandLine (issue 44): every documented
// helm command that installs one of the chart's examples gives each target
// it installs its zones on the command line, as rke2.md and k3s.md do, so
// that a pasted command never answers placeholder zones; and the examples
// that ship without zones (the Cozystack ones and tenant mode, whose zones
// can only be the user's) fail without them, naming the field.
func TestExampleInstallsSetZonesOnTheCommandLine(t *testing.T) {
	installs := 0
	for _, c := range documentedHelmCommands(t) {
		if verb := c.words[1]; verb != "install" && verb != "upgrade" {
			continue
		}
		for i, w := range c.words {
			if (w != "-f" && w != "--values") || i+1 >= len(c.words) {
				continue
			}
			example := exampleOf(c.words[i+1])
			if example == "" {
				continue
			}
			installs++
			t.Run(c.where, func(t *testing.T) {
				for _, target := range enabledTargets(t, example, c.words) {
					want := fmt.Sprintf("targets.%s.zones=", target)
					if !slices.ContainsFunc(c.words, func(w string) bool { return strings.HasPrefix(w, want) }) {
						t.Errorf("%s installs examples/%s without --set-json '%s[...]': it would answer the example's placeholder zones",
							strings.Join(c.words, " "), example, want)
					}
				}
			})
		}
	}
	if installs < 5 {
		t.Fatalf("found %d installs of the chart's examples; the extraction is broken", installs)
	}

	h := harness.RequireHelm(t)
	for _, tt := range []struct{ example, target string }{
		{"cozystack-management.yaml", "tenant-root"},
		{"cozystack-tenant.yaml", "ingress-nginx"},
		{"tenant-mode.yaml", "ingress-nginx"},
	} {
		t.Run(tt.example+" alone", func(t *testing.T) {
			out, err := helmTemplate(t, h, valuesCase{values: []string{filepath.Join(chartDir(t), "examples", tt.example)}})
			if want := "/targets/" + tt.target + "/zones"; err == nil || !strings.Contains(err.Error()+string(out), want) {
				t.Errorf("examples/%s without zones on the command line: %v; want a failure naming %s", tt.example, err, want)
			}
		})
	}
}

// TestCozystackExampleNamesNoMadeUpTenant (issue 44): the management
// example installs the root tenant's target alone, which every Cozystack
// has; any other tenant's is the user's to add (kubectl hairpin check
// prints it), never a proxy route to a controller the cluster may lack.
func TestCozystackExampleNamesNoMadeUpTenant(t *testing.T) {
	got := enabledTargets(t, "cozystack-management.yaml", nil)
	if !slices.Equal(got, []string{"tenant-root"}) {
		t.Errorf("examples/cozystack-management.yaml installs targets %v; want [tenant-root]", got)
	}
}
