package kubectlhairpin

import (
	"strings"
	"testing"
)

// TestInstallCommandNamesTheDefaultTargetOnce: the install command keeps
// the chart's default target only for its own controller and class, and
// no other target takes its name, which the command disables otherwise
// (a class named ingress-nginx elsewhere would be disabled with it).
func TestInstallCommandNamesTheDefaultTargetOnce(t *testing.T) {
	controller := func(namespace, name, class string) Controller {
		return Controller{Kind: "ingress-nginx", IngressClasses: []string{class},
			Upstream: service(namespace, name, nil, "", port("http", 80, 80), port("https", 443, 443))}
	}
	tests := []struct {
		name        string
		controllers []Controller
		want, not   []string
	}{
		{"its own controller and class", []Controller{controller("ingress-nginx", "ingress-nginx-controller", "nginx")},
			[]string{`'targets.ingress-nginx={"zones":["example.com"],"ingressClasses":["nginx"]`}, []string{"enabled=false", "targets.nginx="}},
		{"a class named like it elsewhere", []Controller{controller("edge", "ingress-nginx-controller", "ingress-nginx")},
			[]string{"'targets.ingress-nginx.enabled=false'", `'targets.ingress-nginx-2={"zones":["example.com"],"ingressClasses":["ingress-nginx"]`}, []string{"'targets.ingress-nginx={"}},
		{"nothing to front", nil,
			[]string{`'targets.ingress-nginx.zones=["example.com"]'`}, []string{"enabled=false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Facts{TargetsRead: true, Controllers: tt.controllers, Options: Options{TargetsNamespace: "hairpin-system", Version: "v0.1.0"}}
			f.hints = newHintPlan(f)
			cmd := installCommand(f)
			if !strings.HasPrefix(cmd, "helm install hairpin "+chartRef+" --version 0.1.0 -n hairpin-system --create-namespace ") {
				t.Errorf("command %q does not install the released chart", cmd)
			}
			for _, w := range tt.want {
				if !strings.Contains(cmd, w) {
					t.Errorf("command %q lacks %s", cmd, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(cmd, n) {
					t.Errorf("command %q has %s", cmd, n)
				}
			}
		})
	}
}
