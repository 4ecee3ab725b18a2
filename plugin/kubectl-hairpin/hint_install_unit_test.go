package kubectlhairpin

import (
	"strings"
	"testing"

	core "k8s.io/api/core/v1"
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
			commandHasOnly(t, cmd, tt.want, tt.not)
		})
	}
}

// TestInstallCommandCarriesTheClustersDomainAndServiceAccount (issue 44):
// pasted on a cluster whose CoreDNS differs from the chart's defaults, the
// install command still works: the proxy dials its upstreams in the
// cluster's domain (Cozystack's management cluster: cozy.local, in the
// kubernetes directive of Talos's Corefile), and the chart binds the reads
// to the ServiceAccount CoreDNS runs as (a Cozystack tenant's: kube-dns).
func TestInstallCommandCarriesTheClustersDomainAndServiceAccount(t *testing.T) {
	const conf = "/etc/coredns/Corefile"
	corefile := func(kubernetes string) *Corefile {
		text := ".:53 {\n    errors\n    kubernetes " + kubernetes + " {\n        pods insecure\n    }\n    forward . /etc/resolv.conf\n}\n"
		blocks, _, err := readCorefile(conf, podFiles{files: map[string]mountedFile{conf: {configMap: "kube-system/coredns", key: "Corefile", text: text}}})
		if err != nil {
			t.Fatal(err)
		}
		return &Corefile{Blocks: blocks}
	}
	pod := func(namespace, sa string) []PodFacts {
		p := &core.Pod{}
		p.Namespace, p.Spec.ServiceAccountName = namespace, sa
		return []PodFacts{{Pod: p}}
	}
	tests := []struct {
		name      string
		corefile  *Corefile
		pods      []PodFacts
		want, not []string
	}{
		{"kubeadm's", corefile("cluster.local in-addr.arpa ip6.arpa"), pod("kube-system", "coredns"),
			nil, []string{"clusterDomain", "coredns.serviceAccount"}},
		{"Cozystack's management cluster (Talos, cozy.local)", corefile("cozy.local in-addr.arpa ip6.arpa"), pod("kube-system", "coredns"),
			[]string{`--set-json 'clusterDomain="cozy.local"'`}, []string{"coredns.serviceAccount"}},
		{"the reverse zones first", corefile("in-addr.arpa ip6.arpa Cozy.Local."), pod("kube-system", "coredns"),
			[]string{`--set-json 'clusterDomain="cozy.local"'`}, nil},
		{"a Cozystack tenant (kube-dns)", corefile("cluster.local in-addr.arpa ip6.arpa"), pod("kube-system", "kube-dns"),
			[]string{`--set-json 'coredns.serviceAccount={"namespace":"kube-system","name":"kube-dns"}'`}, []string{"clusterDomain"}},
		{"nothing read", nil, nil, nil, []string{"clusterDomain", "coredns.serviceAccount"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Facts{TargetsRead: true, Corefile: tt.corefile, CoreDNS: tt.pods, Options: Options{TargetsNamespace: "hairpin-system"}}
			f.hints = newHintPlan(f)
			cmd := installCommand(f)
			commandHasOnly(t, cmd, tt.want, tt.not)
		})
	}
}

// commandHasOnly fails unless cmd has each of want and none of not.
func commandHasOnly(t *testing.T, cmd string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(cmd, w) {
			t.Errorf("command %q lacks %s", cmd, w)
		}
	}
	for _, n := range not {
		if strings.Contains(cmd, n) {
			t.Errorf("command %q has %s", cmd, n)
		}
	}
}
