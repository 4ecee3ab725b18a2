package kubectlhairpin

import (
	"fmt"
	"strings"
	"testing"

	core "k8s.io/api/core/v1"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// The hosts healthyCluster's targets answer, as ouroboros would list them
// (it drops the wildcard) and as hairpin-proxy would (it reads Ingress
// TLS hosts: app.example.com, had the Ingress a certificate).
var leftoverHosts = []string{"app.example.com", "*.tenant.org", "shop.tenant.org"}

// distributionCorefile is a distribution's Corefile from test/e2e's
// fixtures, without the header that cites it: what its ConfigMap holds.
func distributionCorefile(name string) string {
	text, err := e2e.DistributionCorefile(name)
	if err != nil {
		panic(err) // a test's own data file
	}
	lines := strings.Split(text, "\n")
	for len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
		lines = lines[1:]
	}
	return strings.Join(lines, "\n")
}

// mountCorefile gives CoreDNS's pods their configuration as k3s mounts it
// (k3s-io/k3s manifests/coredns.yaml, cited in test/e2e's k3s.Corefile):
// ConfigMap coredns's key Corefile at /etc/coredns, and the optional
// ConfigMap coredns-custom at /etc/coredns/custom; custom, when not nil,
// is coredns-custom's data.
func mountCorefile(c *cluster, corefile string, custom map[string]string) {
	optional := true
	for _, name := range []string{"coredns-a", "coredns-b"} {
		for _, o := range c.objects {
			p, ok := o.(*core.Pod)
			if !ok || p.Namespace != "kube-system" || p.Name != name {
				continue
			}
			p.Spec.Volumes = []core.Volume{
				{Name: "config-volume", VolumeSource: core.VolumeSource{ConfigMap: &core.ConfigMapVolumeSource{
					LocalObjectReference: core.LocalObjectReference{Name: "coredns"},
					Items:                []core.KeyToPath{{Key: "Corefile", Path: "Corefile"}},
				}}},
				{Name: "custom-config-volume", VolumeSource: core.VolumeSource{ConfigMap: &core.ConfigMapVolumeSource{
					LocalObjectReference: core.LocalObjectReference{Name: "coredns-custom"}, Optional: &optional,
				}}},
			}
			ctr := &p.Spec.Containers[0]
			ctr.Args = []string{"-conf", "/etc/coredns/Corefile"}
			ctr.VolumeMounts = []core.VolumeMount{
				{Name: "config-volume", MountPath: "/etc/coredns", ReadOnly: true},
				{Name: "custom-config-volume", MountPath: "/etc/coredns/custom", ReadOnly: true},
			}
		}
	}
	c.remove("kube-system", "coredns")
	c.remove("kube-system", "coredns-custom")
	c.add(&core.ConfigMap{ObjectMeta: objectMeta("kube-system", "coredns", nil), Data: map[string]string{"Corefile": corefile}})
	if custom != nil {
		c.add(&core.ConfigMap{ObjectMeta: objectMeta("kube-system", "coredns-custom", nil), Data: custom})
	}
}

// The leftovers, each a change of healthyCluster.
func ouroborosCorefileMode(t *testing.T, c *cluster) {
	corefile, err := harness.OuroborosCorefile(distributionCorefile("talos"), leftoverHosts, harness.OuroborosTarget)
	if err != nil {
		t.Fatal(err)
	}
	mountCorefile(c, corefile, nil)
}

func ouroborosImportMode(_ *testing.T, c *cluster) {
	mountCorefile(c, distributionCorefile("k3s"), map[string]string{"ouroboros.override": harness.OuroborosOverride(leftoverHosts, harness.OuroborosTarget)})
}

func hairpinProxyLeftover(t *testing.T, c *cluster) {
	corefile, err := harness.HairpinProxyCorefile(distributionCorefile("kubeadm"), []string{"app.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	mountCorefile(c, corefile, nil)
}

// overrides is the k3s Corefile with coredns-custom holding one snippet.
func overrides(key, snippet string) func(*testing.T, *cluster) {
	return func(_ *testing.T, c *cluster) {
		mountCorefile(c, distributionCorefile("k3s"), map[string]string{key: snippet})
	}
}

// TestGoldenShadows compares the report on what ouroboros (both modes)
// and compumike's hairpin-proxy leave behind, on a rewrite of no hairpin
// host, and on a regex and a suffix rule that cover the wildcard host
// *.tenant.org, with testdata/golden (go test -update rewrites them). The
// clean state is healthy.txt's.
func TestGoldenShadows(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name   string
		change func(*testing.T, *cluster)
	}{
		{"shadow-ouroboros-coredns", ouroborosCorefileMode},
		{"shadow-ouroboros-coredns-import", ouroborosImportMode},
		{"shadow-hairpin-proxy", hairpinProxyLeftover},
		{"shadow-no-hairpin-host", overrides("db.override", "rewrite name exact db.example.net db.default.svc.cluster.local\n")},
		{"shadow-regex-wildcard", overrides("tenant.override", "rewrite stop {\n    name regex (.*)\\.tenant\\.org\\. {1}.envoy-tenant-gw-1a2b3c.envoy-gateway-system.svc.cluster.local.\n    answer auto\n}\n")},
		{"shadow-suffix-wildcard", overrides("tenant.override", "rewrite continue name suffix .tenant.org .tenant.svc.cluster.local answer auto\n")},
	} {
		t.Run(tc.name, func(t *testing.T) { e.goldenTable(t, tc.name, tc.change) })
	}
}

// loadedRewrites makes each CoreDNS replica say, in its metrics, how many
// hairpin hosts the rewrite it has loaded renames: a and b for coredns-a
// and coredns-b.
func loadedRewrites(a, b int) func(*testing.T, *cluster) {
	return func(_ *testing.T, c *cluster) {
		for ip, n := range map[string]int{corednsA: a, corednsB: b} {
			c.metrics[ip+":9153"] += fmt.Sprintf("# TYPE %s gauge\n%s{server=\"dns://:53\",zone=\".\"} %d\n", rules.MetricHostsRewritten, rules.MetricHostsRewritten, n)
		}
	}
}

func init() {
	checkCases = append(checkCases,
		checkCase{id: idHostsShadowed, name: "ReplicaStillRunsTheRemovedRule", want: Warn, contains: "1 of 2 CoreDNS replicas still run a rewrite that renames hairpin hosts, as they loaded it: coredns-a (2 hosts)", change: loadedRewrites(2, 0)},
		checkCase{id: idHostsShadowed, name: "EveryReplicaLoadedTheCorefileWithoutTheRule", want: OK, contains: "and no CoreDNS replica's loaded rewrite renames one (2/2 replicas say so)", change: loadedRewrites(0, 0)},
		checkCase{id: idHostsShadowed, name: "NoRewrite", want: OK, contains: "no rewrite rule covers a hairpin host"},
		checkCase{id: idHostsShadowed, name: "OuroborosLeftover", want: Warn, contains: "host app.example.com is rewritten before hairpin sees it, so hairpin never answers it: ouroboros's rewrite `rewrite name app.example.com ouroboros-proxy.ouroboros.svc.cluster.local.` (ConfigMap kube-system/coredns-custom, key ouroboros.override, line 1)", change: ouroborosImportMode},
		checkCase{id: idHostsShadowed, name: "RuleCoreDNSCannotRead", want: Warn, contains: "cannot tell whether a rewrite `rewrite name glob *.example.com proxy.` (ConfigMap kube-system/coredns-custom, key glob.override, line 1) rewrites a hairpin host", change: overrides("glob.override", "rewrite name glob *.example.com proxy.\n")},
		checkCase{id: idHostsShadowed, name: "ConfigMapsForbidden", want: Warn, contains: "cannot tell whether a rewrite rule shadows hairpin hosts: ConfigMap kube-system/coredns, mounted at /etc/coredns, could not be read", as: droppingResource("configmaps")},
	)
}
