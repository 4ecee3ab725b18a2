package kubectlhairpin

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	core "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// TestInstallHintIsOneCompleteCommand (issue 44): on a cluster without a
// target yet, the targets-found line prints one helm command that a user
// pastes as it is: the released chart (oci://, the plugin's version), a
// target for every class the check found, the chart's default target kept
// only for its own class and controller, and container ports that no two
// targets share. Real helm renders it with the chart's schema, together
// with every other --set-json of the report (pasting those too only
// repeats values), and the targets it renders are the classes found.
func TestInstallHintIsOneCompleteCommand(t *testing.T) {
	h := harness.RequireHelm(t)
	e := newEnv(t)
	tests := []struct {
		name     string
		cluster  func() *cluster
		disabled bool     // the command disables the default target
		classes  []string // the ingress classes of the rendered targets, sorted
	}{
		{"nothing to front", dnsOnlyCluster, false, []string{"nginx"}},
		{"kubeadm's ingress-nginx", func() *cluster {
			c := dnsOnlyCluster()
			addIngressNginx(c, "ingress-nginx", "ingress-nginx-controller", "nginx", "app.example.com", "203.0.113.10")
			return c
		}, false, []string{"nginx"}},
		{"Cozystack's tenants", func() *cluster {
			// test/dataplane's cozyControllers: the root tenant's and
			// tenant-foo's ingress, each class named after its namespace.
			c := dnsOnlyCluster()
			addIngressNginx(c, "tenant-root", "root-ingress-controller", "tenant-root", "keycloak.example.org", "203.0.113.20")
			addIngressNginx(c, "tenant-foo", "foo-ingress-controller", "tenant-foo", "shop.foo.example.org", "203.0.113.21")
			return c
		}, true, []string{"tenant-foo", "tenant-root"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.apply(t, tt.cluster())
			r := e.run(t, e.cp.Config)
			var commands, others []string
			for _, ch := range r.Checks {
				if i := strings.Index(ch.Hint, "helm install"); i >= 0 {
					commands = append(commands, strings.TrimSuffix(ch.Hint[i:strings.Index(ch.Hint+";", ";")], ";"))
					continue
				}
				for _, m := range setJSON.FindAllStringSubmatch(ch.Hint, -1) {
					// A hint for a controller the check did not find is a
					// template (targets.NAME=...), not a value to paste.
					if !strings.HasPrefix(m[1], "targets.NAME=") {
						others = append(others, m[1])
					}
				}
			}
			if len(commands) != 1 {
				t.Fatalf("the report has %d helm commands %q; want one\nreport:\n%s", len(commands), commands, table(t, r))
			}
			t.Logf("%s", commands[0])
			words, err := harness.ShellWords(commands[0])
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"helm", "install", "hairpin", chartRef, "--version", "0.1.0", "-n", "hairpin-system", "--create-namespace"}
			if len(words) < len(want) || !slices.Equal(words[:len(want)], want) {
				t.Fatalf("the command %q does not start with %q", commands[0], strings.Join(want, " "))
			}
			if got := slices.Contains(words, "targets.ingress-nginx.enabled=false"); got != tt.disabled {
				t.Errorf("the command disables the default target: %v; want %v\n%s", got, tt.disabled, commands[0])
			}
			for _, o := range others {
				if !slices.Contains(words, o) {
					t.Errorf("a hint of the report sets %s, which the install command does not", o)
				}
			}
			// As pasted, from this checkout's chart, with the report's
			// other hints after it.
			args := append([]string{"template", "hairpin", filepath.Join("..", "..", "manifests", "coredns-hairpin")}, words[len(want)-3:]...)
			for _, o := range others {
				args = append(args, "--set-json", o)
			}
			out, err := h.Run(context.Background(), args...)
			if err != nil {
				t.Fatalf("the install command does not render: %v\n%s\nreport:\n%s", err, commands[0], table(t, r))
			}
			var classes []string
			for _, svc := range renderedServices(t, out) {
				if _, ok := svc.Labels[rules.TargetLabel]; ok {
					classes = append(classes, svc.Annotations[rules.IngressClassesAnnotation])
				}
			}
			slices.Sort(classes)
			if !slices.Equal(classes, tt.classes) {
				t.Errorf("the command installs targets of classes %q; want %q\n%s", classes, tt.classes, commands[0])
			}
		})
	}
}

// renderedServices returns the Services of a rendered chart.
func renderedServices(t *testing.T, rendered string) []core.Service {
	t.Helper()
	var out []core.Service
	for _, doc := range strings.Split(rendered, "\n---") {
		var kind struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			t.Fatalf("rendered document: %v\n%s", err, doc)
		}
		if kind.Kind != "Service" {
			continue
		}
		var svc core.Service
		if err := yaml.Unmarshal([]byte(doc), &svc); err != nil {
			t.Fatalf("rendered Service: %v\n%s", err, doc)
		}
		out = append(out, svc)
	}
	return out
}
