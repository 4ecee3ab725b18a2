package manifests

import (
	"regexp"
	"strings"
	"testing"
)

// versionPins find the release versions a page pins: helm's --version of
// our chart, our images' tags, the release's download URLs, `make release
// VERSION=`, and the tag values of the registry and distribution examples.
var versionPins = []struct {
	what string
	re   *regexp.Regexp
	// chart: the pin is the chart's version (X.Y.Z), else its appVersion.
	chart bool
}{
	{"helm --version", regexp.MustCompile(`charts/coredns-hairpin\s+--version[ =]([^\s\\]+)`), true},
	{"chart tag", regexp.MustCompile(`charts/coredns-hairpin:([0-9][^\s"'` + "`" + `)]*)`), true},
	{"image tag", regexp.MustCompile(`coredns-hairpin/(?:coredns|hairpin-proxy):([^\s"'` + "`" + `)@#]+)`), false},
	{"release download", regexp.MustCompile(`releases/download/([^/\s]+)/`), false},
	{"file of the release's tag", regexp.MustCompile(`raw\.githubusercontent\.com/coredns-hairpin/hairpin/([^/\s]+)/`), false},
	{"make release VERSION", regexp.MustCompile(`VERSION=(v[^\s` + "`" + `]+)`), false},
	{"tag value", regexp.MustCompile(`(?i)(?:newTag|imageTag|image\.tag|\btag)[:=]\s*"?(v[0-9][^\s"'` + "`" + `,}]*)`), false},
}

// TestOneVersionEverywhere (issue 34, 2): the first release has one version.
// Chart.yaml's appVersion is "v" + its version; the CHANGELOG's first
// section is that version (nothing listed as unreleased above it, which the
// docs would then pin without having); every version a page pins (helm
// --version, image tags, download URLs, VERSION=, tag values) is that
// release; and --kernel-relay, which the release does not have, is listed
// only under a `### Removed` heading.
func TestOneVersionEverywhere(t *testing.T) {
	version, appVersion := chartMeta(t)
	if appVersion != "v"+version {
		t.Errorf("Chart.yaml: appVersion %q, version %q; want appVersion v%s", appVersion, version, version)
	}
	changelog := readDoc(t, "CHANGELOG.md")
	section := regexp.MustCompile(`(?m)^## \[([^\]]+)\]`).FindStringSubmatch(changelog)
	if section == nil || section[1] != version {
		t.Errorf("CHANGELOG.md: the first section is %v; want [%s], the chart's version", section, version)
	}
	heading := ""
	for _, line := range strings.Split(changelog, "\n") {
		if strings.HasPrefix(line, "#") {
			heading = line
		}
		if strings.Contains(line, "--kernel-relay") && heading != "### Removed" {
			t.Errorf("CHANGELOG.md: --kernel-relay under %q; a removed flag is listed under ### Removed", heading)
		}
	}
	seen := 0
	for _, f := range docFiles(t) {
		if f == "CHANGELOG.md" {
			continue
		}
		text := readDoc(t, f)
		for _, p := range versionPins {
			for _, m := range p.re.FindAllStringSubmatch(text, -1) {
				seen++
				want := appVersion
				if p.chart {
					want = version
				}
				if m[1] != want && m[1] != "vX.Y.Z" && m[1] != "X.Y.Z" { // a syntax, not a pin
					t.Errorf("%s: %s %q pins %s; the release is %s", f, p.what, m[0], m[1], want)
				}
			}
		}
	}
	if seen < 20 {
		t.Errorf("found %d version pins in the docs; the scan is broken", seen)
	}
}

// TestRKE2ServiceAccountIsOneThing (issue 34, 4): the docs say one thing
// about the service account of RKE2's CoreDNS: rke2-coredns names it
// `coredns` (its values patch), which is the chart's default. No sentence
// of a page or of values.yaml may say it is derived from the release name.
func TestRKE2ServiceAccountIsOneThing(t *testing.T) {
	files := append(docFiles(t), "manifests/coredns-hairpin/values.yaml")
	sentence := regexp.MustCompile(`[^.]*(?:RKE2|rke2-coredns)[^.]*\.`)
	for _, f := range files {
		text := strings.Join(strings.Fields(readDoc(t, f)), " ")
		for _, s := range sentence.FindAllString(text, -1) {
			if strings.Contains(s, "release name") {
				t.Errorf("%s: %q: rke2-coredns names its service account coredns, whatever the release", f, strings.TrimSpace(s))
			}
		}
	}
	if rke2 := strings.Join(strings.Fields(readDoc(t, "docs/install/rke2.md")), " "); !strings.Contains(rke2, "names it `coredns`, in `kube-system`") {
		t.Errorf("docs/install/rke2.md no longer says that rke2-coredns names its service account coredns")
	}
}

// TestReadmeBulkSentenceQuotesItsTable (issue 34, 15): the README's prose
// on the proxy's bulk rate gives the ratios of its own table's row, not
// another run's.
func TestReadmeBulkSentenceQuotesItsTable(t *testing.T) {
	readme := readDoc(t, "README.md")
	row := regexp.MustCompile(`(?m)^\| proxy bulk MB/s \|[^|]*\|[^|]*\| ([0-9.]+)× HAProxy, ([0-9.]+)× direct \|`).FindStringSubmatch(readme)
	if row == nil {
		t.Fatal("README.md: no proxy bulk row with its HAProxy and direct ratios")
	}
	prose := regexp.MustCompile(`Bulk splices at ([0-9.]+)× HAProxy's rate[^.]*?([0-9.]+)× a direct`).FindStringSubmatch(strings.Join(strings.Fields(readme), " "))
	if prose == nil {
		t.Fatal("README.md: no sentence on the bulk rate")
	}
	if prose[1] != row[1] || prose[2] != row[2] {
		t.Errorf("README.md: the bulk sentence says %s× HAProxy and %s× direct; its table says %s× and %s×", prose[1], prose[2], row[1], row[2])
	}
}
