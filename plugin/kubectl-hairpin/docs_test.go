package kubectlhairpin

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	rbac "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// docsDir is the repository's docs folder, beside this package.
var docsDir = filepath.Join("..", "..", "docs")

var headingRe = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)

// anchors are the anchors GitHub gives the headings of a Markdown file:
// lowercase, punctuation but '-' and '_' dropped, spaces to '-'.
func anchors(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range headingRe.FindAllStringSubmatch(string(b), -1) {
		a := strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
				return r
			case r >= 'A' && r <= 'Z':
				return r + 'a' - 'A'
			case r == ' ':
				return '-'
			}
			return -1
		}, m[1])
		out = append(out, a)
	}
	return out
}

// TestDocsListEveryCheckID: every id has its anchor in troubleshooting.md,
// which is where every hint links.
func TestDocsListEveryCheckID(t *testing.T) {
	have := anchors(t, filepath.Join(docsDir, "troubleshooting.md"))
	for _, id := range IDs() {
		if !slices.Contains(have, id) {
			t.Errorf("docs/troubleshooting.md has no heading for check %s (anchor #%s)", id, id)
		}
	}
	if !strings.HasSuffix(DocsURL, "/docs/troubleshooting.md") {
		t.Errorf("DocsURL %s is not the troubleshooting page", DocsURL)
	}
}

// TestHintLinksExist: the other pages and anchors that hints link to.
func TestHintLinksExist(t *testing.T) {
	managed := anchors(t, filepath.Join(docsDir, "install", "managed.md"))
	for _, a := range []string{"eks", "aks", "gke"} {
		if !slices.Contains(managed, a) {
			t.Errorf("docs/install/managed.md has no anchor #%s", a)
		}
	}
	for _, m := range managedMarks {
		if m.anchor != "" && !slices.Contains(managed, m.anchor) {
			t.Errorf("managed DNS %s links to docs/install/managed.md#%s, which does not exist", m.provider, m.anchor)
		}
	}
	for _, page := range []string{"node-local-dns.md", "install.md"} {
		if _, err := os.Stat(filepath.Join(docsDir, page)); err != nil {
			t.Errorf("hints link to docs/%s: %v", page, err)
		}
	}
}

var docsRole struct {
	once  sync.Once
	rules []rbac.PolicyRule
	err   error
}

// docsClusterRole is the read-only ClusterRole that troubleshooting.md
// gives for kubectl hairpin check: the tests run as a user with it.
func docsClusterRole(t testing.TB) []rbac.PolicyRule {
	t.Helper()
	docsRole.once.Do(func() {
		b, err := os.ReadFile(filepath.Join(docsDir, "troubleshooting.md"))
		if err != nil {
			docsRole.err = err
			return
		}
		_, rest, ok := strings.Cut(string(b), "<!-- kubectl-hairpin-clusterrole")
		_, rest, ok2 := strings.Cut(rest, "```yaml\n")
		block, _, ok3 := strings.Cut(rest, "```")
		if !ok || !ok2 || !ok3 {
			docsRole.err = fmt.Errorf("troubleshooting.md: no yaml block after the kubectl-hairpin-clusterrole marker")
			return
		}
		var role rbac.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(block), &role); err != nil {
			docsRole.err = fmt.Errorf("troubleshooting.md's ClusterRole: %w", err)
			return
		}
		docsRole.rules = role.Rules
	})
	if docsRole.err != nil {
		t.Fatal(docsRole.err)
	}
	return slices.Clone(docsRole.rules)
}

// withoutGroup is the docs' role without the rules of apiGroup.
func withoutGroup(apiGroup string) func(testing.TB) []rbac.PolicyRule {
	return func(t testing.TB) []rbac.PolicyRule {
		return slices.DeleteFunc(docsClusterRole(t), func(r rbac.PolicyRule) bool { return slices.Contains(r.APIGroups, apiGroup) })
	}
}

// withoutResource is the docs' role without the rules for resource.
func withoutResource(resource string) func(testing.TB) []rbac.PolicyRule {
	return func(t testing.TB) []rbac.PolicyRule {
		return slices.DeleteFunc(docsClusterRole(t), func(r rbac.PolicyRule) bool { return slices.Contains(r.Resources, resource) })
	}
}
