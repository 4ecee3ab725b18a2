package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// repoURL is where the repository's files are browsed; links to it must
// name files that exist.
const repoURL = "https://github.com/coredns-hairpin/hairpin/blob/main/"

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fencedCode = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	heading    = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
)

// slug is the anchor GitHub gives a heading.
func slug(h string) string {
	h = strings.ToLower(strings.ReplaceAll(h, "`", ""))
	var b strings.Builder
	for _, r := range h {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors returns the heading anchors of a Markdown file.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fencedCode.ReplaceAllString(text, ""), -1) {
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// checkTarget reports what is wrong with a link to path#anchor (path
// absolute), or "".
func checkTarget(path, anchor string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "no such file"
	}
	if anchor == "" || st.IsDir() {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if !anchors(string(b))[anchor] {
		return "no heading #" + anchor
	}
	return ""
}

// TestDocLinksResolve checks every link of the docs (issue 21, 10): a
// relative link names a file (and heading) of the repository, a link to the
// repository on GitHub names one too, and a link in the chart stays inside
// the chart, since the packaged chart has nothing beside it.
func TestDocLinksResolve(t *testing.T) {
	root := repoDir(t)
	chart := chartDir(t)
	checked := 0
	for _, f := range docFiles(t) {
		text := readDoc(t, f)
		prose := inlineCode.ReplaceAllString(fencedCode.ReplaceAllString(text, ""), "")
		dir := filepath.Dir(filepath.Join(root, f))
		inChart := strings.HasPrefix(filepath.Join(root, f), chart+string(filepath.Separator))
		for _, m := range mdLink.FindAllStringSubmatch(prose, -1) {
			link := m[1]
			var path, anchor string
			switch {
			case strings.HasPrefix(link, repoURL):
				p, a, _ := strings.Cut(strings.TrimPrefix(link, repoURL), "#")
				path, anchor = filepath.Join(root, p), a
			case strings.Contains(link, "://"), strings.HasPrefix(link, "mailto:"):
				continue
			case strings.HasPrefix(link, "#"):
				path, anchor = filepath.Join(root, f), link[1:]
			default:
				p, a, _ := strings.Cut(link, "#")
				path, anchor = filepath.Join(dir, p), a
				if inChart && !strings.HasPrefix(path, chart+string(filepath.Separator)) && path != chart {
					t.Errorf("%s: link %s leaves the chart; the packaged chart has nothing beside it (link to %s… instead)", f, link, repoURL)
					continue
				}
			}
			checked++
			if why := checkTarget(path, anchor); why != "" {
				t.Errorf("%s: link %s: %s", f, link, why)
			}
		}
	}
	if checked < 30 {
		t.Errorf("checked %d links; the scan is broken", checked)
	}
}

// TestCitedReleaseNotesExist: where the docs send the reader to release
// notes, they link the changelog or the support table that holds them.
func TestCitedReleaseNotesExist(t *testing.T) {
	for _, f := range docFiles(t) {
		text := readDoc(t, f)
		for i := 0; ; {
			j := strings.Index(strings.ToLower(text[i:]), "release notes")
			if j < 0 {
				break
			}
			at := i + j
			near := text[max(0, at-300):min(len(text), at+300)]
			if !strings.Contains(near, "CHANGELOG.md") && !strings.Contains(near, "upgrade.md") {
				t.Errorf("%s: cites release notes without linking CHANGELOG.md or upgrade.md: …%s…", f, strings.TrimSpace(text[max(0, at-80):min(len(text), at+40)]))
			}
			i = at + len("release notes")
		}
	}
}

// TestNodeLocalDNSNamesNoStanzaActivationDropped: with image-only
// activation there is no hairpin stanza to copy the zones from, so the
// node-local-dns page names where the zones are.
func TestNodeLocalDNSNamesNoStanzaActivationDropped(t *testing.T) {
	doc := readDoc(t, "docs/node-local-dns.md")
	if strings.Contains(doc, "same zones as the `hairpin` stanza") {
		t.Error("docs/node-local-dns.md sends the reader to a hairpin stanza that activation does not write")
	}
	if !strings.Contains(doc, "targets.NAME.zones") {
		t.Error("docs/node-local-dns.md does not say where the zones come from (targets.NAME.zones)")
	}
}

func TestSlugIsGitHubs(t *testing.T) {
	for h, want := range map[string]string{
		"Traefik: do you need hairpin at all?":           "traefik-do-you-need-hairpin-at-all",
		"`helm upgrade`":                                 "helm-upgrade",
		"Order: the chart first, then the CoreDNS image": "order-the-chart-first-then-the-coredns-image",
		"Pod selectors: `{}` and `null`":                 "pod-selectors--and-null",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q; want %q", h, got, want)
		}
	}
}
