package manifests

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/coredns-hairpin/hairpin/build/chartdoc"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// render renders the chart with c and returns its objects.
func render(t *testing.T, c valuesCase, extra ...string) []apiruntime.Object {
	t.Helper()
	out, err := helmTemplate(t, harness.RequireHelm(t), c, extra...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// example is the values case of a file under the chart's examples/, with
// the --set-json flags of the command in its header (its zones), then set.
func example(t *testing.T, name string, set ...string) valuesCase {
	return valuesCase{name: name, values: []string{filepath.Join(chartDir(t), "examples", name)}, set: append(headerSets(t, name), set...)}
}

// dnsPeer returns the peer of the proxy NetworkPolicy's DNS egress rule
// that selects pods.
func dnsPeer(t *testing.T, objs []apiruntime.Object) netv1.NetworkPolicyPeer {
	t.Helper()
	np := find[*netv1.NetworkPolicy](objs, proxyName)
	if np == nil {
		t.Fatal("no proxy NetworkPolicy")
	}
	for _, rule := range np.Spec.Egress {
		for _, p := range rule.Ports {
			if p.Port != nil && p.Port.IntVal == 53 {
				for _, peer := range rule.To {
					if peer.PodSelector != nil {
						return peer
					}
				}
			}
		}
	}
	t.Fatalf("no DNS egress peer with a pod selector in %+v", np.Spec.Egress)
	return netv1.NetworkPolicyPeer{}
}

// selectsPods reports whether a NetworkPolicy pod selector matches a pod
// with these labels, as the API server evaluates it.
func selectsPods(t *testing.T, s *metav1.LabelSelector, podLabels map[string]string) bool {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel.Matches(labels.Set(podLabels))
}

// The CoreDNS pod labels of each distribution and chart the docs name, as
// their manifests set them.
var coreDNSPodLabels = map[string]map[string]string{
	// kubeadm, Talos, k3s: their own manifests; EKS, AKS likewise.
	"kubeadm, Talos, k3s": {"k8s-app": "kube-dns"},
	// rancher/rke2-charts rke2-coredns: k8sApp: kube-dns.
	"RKE2": {"k8s-app": "kube-dns", "app.kubernetes.io/name": "rke2-coredns", "app.kubernetes.io/instance": "rke2-coredns"},
	// coredns/helm charts/coredns templates/deployment.yaml: k8s-app is the
	// chart's name unless k8sAppLabelOverride.
	"the coredns Helm chart": {"k8s-app": "coredns", "app.kubernetes.io/name": "coredns", "app.kubernetes.io/instance": "coredns"},
	// cozystack packages/system/coredns: k8sAppLabelOverride: kube-dns.
	"Cozystack tenant (cozystack-coredns)": {"k8s-app": "kube-dns", "app.kubernetes.io/name": "coredns", "app.kubernetes.io/instance": "coredns"},
}

// TestDNSPolicyAdmitsEveryDistributionsCoreDNS: with the default values the
// proxy may reach the cluster DNS of every distribution and chart the docs
// name (issue 21, 2), and the podSelector docs/install/coredns-helm.md gives
// for a coredns chart without k8s-app selects that chart's pods.
func TestDNSPolicyAdmitsEveryDistributionsCoreDNS(t *testing.T) {
	peer := dnsPeer(t, render(t, valuesCase{set: []string{defaultZones}}))
	if ns := peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]; ns != "kube-system" {
		t.Errorf("DNS peer namespace %q; want kube-system", ns)
	}
	for who, l := range coreDNSPodLabels {
		if !selectsPods(t, peer.PodSelector, l) {
			t.Errorf("the default DNS rule does not admit %s's CoreDNS pods %v (selector %+v)", who, l, peer.PodSelector)
		}
	}
	for _, other := range []map[string]string{{"k8s-app": "metrics-server"}, {"app.kubernetes.io/name": "coredns"}} {
		if selectsPods(t, peer.PodSelector, other) {
			t.Errorf("the default DNS rule admits pods %v, which are no cluster DNS", other)
		}
	}

	var documented string
	for _, c := range documentedHelmCommands(t) {
		if strings.HasPrefix(c.where, "docs/install/coredns-helm.md") {
			for i, w := range c.words {
				if w == "--set-json" && i+1 < len(c.words) && strings.HasPrefix(c.words[i+1], "networkPolicy.dns.podSelector=") {
					documented = c.words[i+1]
				}
			}
		}
	}
	if documented == "" {
		t.Fatal("docs/install/coredns-helm.md gives no networkPolicy.dns.podSelector for a coredns chart without k8s-app")
	}
	peer = dnsPeer(t, render(t, valuesCase{set: []string{defaultZones, documented}}))
	noK8sApp := map[string]string{"app.kubernetes.io/name": "coredns", "app.kubernetes.io/instance": "coredns"}
	if !selectsPods(t, peer.PodSelector, noK8sApp) {
		t.Errorf("--set-json %s does not admit the coredns chart's pods %v", documented, noK8sApp)
	}
}

// TestEmptyAndNullPodSelectorsDoWhatTheDocsSay (issue 21, 6): a DNS pod
// selector is used as written ({} is the whole namespace, a map exactly
// those labels); the default target's upstream selector keeps its labels
// under {} and is cleared by null; a target of your own without one may
// reach its whole namespace.
func TestEmptyAndNullPodSelectorsDoWhatTheDocsSay(t *testing.T) {
	anyPod := map[string]string{"app": "anything"}
	t.Run("dns {} is every pod of the namespace", func(t *testing.T) {
		peer := dnsPeer(t, render(t, valuesCase{set: []string{defaultZones, `networkPolicy.dns.podSelector={}`}}))
		if !selectsPods(t, peer.PodSelector, anyPod) {
			t.Errorf("podSelector {} renders %+v, which does not select every pod", peer.PodSelector)
		}
	})
	t.Run("dns map is exactly those labels", func(t *testing.T) {
		peer := dnsPeer(t, render(t, valuesCase{set: []string{defaultZones, `networkPolicy.dns.podSelector={"app":"my-dns"}`}}))
		if !selectsPods(t, peer.PodSelector, map[string]string{"app": "my-dns"}) || selectsPods(t, peer.PodSelector, map[string]string{"k8s-app": "kube-dns"}) {
			t.Errorf("podSelector {app: my-dns} renders %+v; want those labels only, not merged with a default", peer.PodSelector)
		}
	})
	upstreamSelector := func(t *testing.T, objs []apiruntime.Object, ns string) *metav1.LabelSelector {
		t.Helper()
		np := find[*netv1.NetworkPolicy](objs, proxyName)
		for _, rule := range np.Spec.Egress {
			for _, peer := range rule.To {
				if peer.NamespaceSelector != nil && peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == ns && peer.PodSelector != nil {
					return peer.PodSelector
				}
			}
		}
		t.Fatalf("no egress rule to namespace %s", ns)
		return nil
	}
	controller := map[string]string{"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "controller"}
	t.Run("default target {} keeps its labels", func(t *testing.T) {
		s := upstreamSelector(t, render(t, valuesCase{set: []string{defaultZones, `targets.ingress-nginx.upstream.podSelector={}`}}), "ingress-nginx")
		if !selectsPods(t, s, controller) || selectsPods(t, s, anyPod) {
			t.Errorf("{} renders %+v; the docs say it keeps the default labels", s)
		}
	})
	t.Run("default target null is the whole namespace", func(t *testing.T) {
		s := upstreamSelector(t, render(t, valuesCase{set: []string{defaultZones, `targets.ingress-nginx.upstream.podSelector=null`}}), "ingress-nginx")
		if !selectsPods(t, s, anyPod) {
			t.Errorf("null renders %+v; the docs say it selects every pod", s)
		}
	})
	t.Run("own target without a selector is the whole namespace", func(t *testing.T) {
		objs := render(t, valuesCase{values: []string{filepath.Join(chartDir(t), "ci", "two-targets-values.yaml")}})
		if s := upstreamSelector(t, objs, "envoy-gateway-system"); !selectsPods(t, s, anyPod) {
			t.Errorf("a target without podSelector renders %+v; the docs say it selects every pod", s)
		}
	})
}

// TestTraefikExampleTargetsK3sTraefik (issue 21, 4): the Traefik example
// makes kube-system/traefik the only target, on its Service ports 80/443,
// with the NetworkPolicy open to the Traefik pods' ports 8000 and 8443.
func TestTraefikExampleTargetsK3sTraefik(t *testing.T) {
	objs := render(t, example(t, "traefik.yaml"))
	var targets []string
	for _, s := range all[*corev1.Service](objs) {
		if _, ok := s.Labels[targetLabel]; ok {
			targets = append(targets, s.Name)
		}
	}
	if !slices.Equal(targets, []string{"traefik"}) {
		t.Fatalf("targets %v; want [traefik]", targets)
	}
	d := find[*appsv1.Deployment](objs, proxyName)
	routes := proxyRoutes(t, d)
	for name, want := range map[string]string{"traefik-web": "traefik.kube-system.svc.cluster.local.:80", "traefik-websecure": "traefik.kube-system.svc.cluster.local.:443"} {
		if routes[name].upstream != want {
			t.Errorf("route %s to %q; want %s", name, routes[name].upstream, want)
		}
	}
	np := find[*netv1.NetworkPolicy](objs, proxyName)
	var ports []string
	for _, rule := range np.Spec.Egress {
		for _, peer := range rule.To {
			if peer.NamespaceSelector != nil && peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "kube-system" &&
				peer.PodSelector != nil && selectsPods(t, peer.PodSelector, map[string]string{"app.kubernetes.io/name": "traefik", "app.kubernetes.io/instance": "traefik-kube-system"}) {
				for _, p := range rule.Ports {
					ports = append(ports, p.Port.String())
				}
			}
		}
	}
	slices.Sort(ports)
	if !slices.Equal(ports, []string{"8000", "8443"}) {
		t.Errorf("egress to the Traefik pods on %v; want [8000 8443]", ports)
	}
	if !strings.Contains(readDoc(t, "docs/install/k3s.md"), "examples/traefik.yaml") {
		t.Errorf("docs/install/k3s.md does not install with examples/traefik.yaml")
	}
}

// TestOwnRegistryExampleRendersOnlyThatRegistry (issue 21, 1): the values
// the docs give for your own registry put both images there, with the
// pull secret, in tenant mode too.
func TestOwnRegistryExampleRendersOnlyThatRegistry(t *testing.T) {
	_, appVersion := chartMeta(t)
	objs := render(t, example(t, "own-registry.yaml", `tenant.enabled=true`))
	want := map[string]string{
		proxyName:         "registry.example.com/hairpin/hairpin-proxy:" + appVersion,
		tenantCoreDNSName: "registry.example.com/hairpin/coredns:" + appVersion,
	}
	for name, image := range want {
		d := find[*appsv1.Deployment](objs, name)
		if d == nil {
			t.Fatalf("no Deployment %s", name)
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
			t.Errorf("%s runs %s; want %s", name, got, image)
		}
		if s := d.Spec.Template.Spec.ImagePullSecrets; len(s) != 1 || s[0].Name != "registry-example-com" {
			t.Errorf("%s pull secrets %v", name, s)
		}
	}
	if !strings.Contains(readDoc(t, "docs/install.md"), "examples/own-registry.yaml") {
		t.Errorf("docs/install.md does not point at examples/own-registry.yaml")
	}
}

// TestImageDigestPinsByTagAndDigest: a digest renders REPOSITORY:TAG@DIGEST.
func TestImageDigestPinsByTagAndDigest(t *testing.T) {
	_, appVersion := chartMeta(t)
	digest := "sha256:" + strings.Repeat("ab", 32)
	objs := render(t, valuesCase{set: []string{defaultZones, `proxy.image.digest="` + digest + `"`}})
	d := find[*appsv1.Deployment](objs, proxyName)
	if got, want := d.Spec.Template.Spec.Containers[0].Image, "ghcr.io/coredns-hairpin/hairpin-proxy:"+appVersion+"@"+digest; got != want {
		t.Errorf("image %s; want %s", got, want)
	}
}

// TestRKE2DocsMatchRKE2 (issue 21, 3): the rke2.md install binds the RBAC to
// rke2-coredns's service account kube-system/coredns, and its
// HelmChartConfigs are rke2-coredns's, one of them giving the repository
// below a system-default-registry, without a registry host.
func TestRKE2DocsMatchRKE2(t *testing.T) {
	version, _ := chartMeta(t)
	var installs int
	for _, c := range documentedHelmCommands(t) {
		if !strings.HasPrefix(c.where, "docs/install/rke2.md") {
			continue
		}
		installs++
		args, err := c.renderArgs(t, version)
		if err != nil {
			t.Fatal(err)
		}
		out, err := harness.RequireHelm(t).Run(t.Context(), args...)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decode([]byte(out))
		if err != nil {
			t.Fatal(err)
		}
		for _, rb := range all[*rbacv1.ClusterRoleBinding](objs) {
			if rb.Name == "hairpin-coredns" && (len(rb.Subjects) != 1 || rb.Subjects[0].Namespace != "kube-system" || rb.Subjects[0].Name != "coredns") {
				t.Errorf("hairpin-coredns binds %v; rke2-coredns runs as kube-system/coredns", rb.Subjects)
			}
		}
	}
	if installs == 0 {
		t.Fatal("docs/install/rke2.md has no helm command for the chart")
	}
	var repos []string
	for _, b := range yamlBlocks(t, "docs/install/rke2.md") {
		body := b.Body
		if !strings.Contains(body, "kind:") {
			// A valuesContent excerpt: wrap it the way the full object holds it.
			body = "apiVersion: helm.cattle.io/v1\nkind: HelmChartConfig\nmetadata: {name: rke2-coredns, namespace: kube-system}\nspec:\n" + body
		}
		var hcc struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct{ Name, Namespace string }
			Spec       struct {
				ValuesContent string `json:"valuesContent"`
			} `json:"spec"`
		}
		if err := yaml.UnmarshalStrict([]byte(body), &hcc); err != nil {
			t.Fatalf("rke2.md line %d: %v", b.Line, err)
		}
		if hcc.Kind != "HelmChartConfig" || hcc.Metadata.Name != "rke2-coredns" || hcc.Metadata.Namespace != "kube-system" {
			t.Errorf("rke2.md line %d: %s %s/%s; want HelmChartConfig kube-system/rke2-coredns", b.Line, hcc.Kind, hcc.Metadata.Namespace, hcc.Metadata.Name)
		}
		var v struct {
			Image struct{ Repository, Tag string } `json:"image"`
		}
		if err := yaml.UnmarshalStrict([]byte(hcc.Spec.ValuesContent), &v); err != nil {
			t.Fatalf("rke2.md line %d: valuesContent: %v", b.Line, err)
		}
		repos = append(repos, v.Image.Repository)
	}
	relative := slices.ContainsFunc(repos, func(r string) bool {
		first, _, _ := strings.Cut(r, "/")
		return r != "" && !strings.ContainsAny(first, ".:")
	})
	if !relative || !strings.Contains(readDoc(t, "docs/install/rke2.md"), "system-default-registry") {
		t.Errorf("rke2.md gives repositories %v and no system-default-registry form (a repository without its registry host)", repos)
	}
}

// TestCozystackMigrationKeepsProxyProtocolAndDropsOuroboros (issue 21, 7):
// the documented platform Package keeps publishing.proxyProtocol on and
// disables the cozystack.ouroboros package, and the management example
// dials its upstreams in the management cluster's domain.
func TestCozystackMigrationKeepsProxyProtocolAndDropsOuroboros(t *testing.T) {
	found := false
	for _, b := range yamlBlocks(t, "docs/migrate.md") {
		var pkg struct {
			Kind     string `json:"kind"`
			Metadata struct{ Name string }
			Spec     struct {
				Components struct {
					Platform struct {
						Values struct {
							Publishing struct {
								ProxyProtocol bool `json:"proxyProtocol"`
							} `json:"publishing"`
							Bundles struct {
								DisabledPackages []string `json:"disabledPackages"`
							} `json:"bundles"`
						} `json:"values"`
					} `json:"platform"`
				} `json:"components"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(b.Body), &pkg); err != nil || pkg.Kind != "Package" {
			continue
		}
		found = true
		v := pkg.Spec.Components.Platform.Values
		if pkg.Metadata.Name != "cozystack.cozystack-platform" || !v.Publishing.ProxyProtocol || !slices.Contains(v.Bundles.DisabledPackages, "cozystack.ouroboros") {
			t.Errorf("migrate.md line %d: Package %s, proxyProtocol %v, disabledPackages %v; want cozystack.cozystack-platform keeping the PROXY protocol and disabling cozystack.ouroboros",
				b.Line, pkg.Metadata.Name, v.Publishing.ProxyProtocol, v.Bundles.DisabledPackages)
		}
	}
	if !found {
		t.Error("docs/migrate.md has no Cozystack platform Package that turns ouroboros off")
	}
	routes := proxyRoutes(t, find[*appsv1.Deployment](render(t, example(t, "cozystack-management.yaml")), proxyName))
	if r := routes["tenant-root-http"].upstream; r != "root-ingress-controller.tenant-root.svc.cozy.local.:80" {
		t.Errorf("the management example dials %q; Cozystack's management cluster domain is cozy.local", r)
	}
}

// TestHetznerValuesSendTheHeader (issue 21, 9): the ingress-nginx values
// the Hetzner section points at turn the PROXY protocol on with the CCM's
// annotation, and publish a hostname.
func TestHetznerValuesSendTheHeader(t *testing.T) {
	const file = "examples/ingress-nginx/hetzner.yaml"
	var v struct {
		Controller struct {
			Service struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"service"`
		} `json:"controller"`
	}
	b := readDoc(t, filepath.Join("manifests", "coredns-hairpin", file))
	if err := yaml.UnmarshalStrict([]byte(b), &v); err != nil {
		t.Fatal(err)
	}
	a := v.Controller.Service.Annotations
	if a["load-balancer.hetzner.cloud/uses-proxyprotocol"] != "true" || a["load-balancer.hetzner.cloud/hostname"] == "" {
		t.Errorf("annotations %v; want uses-proxyprotocol \"true\" and a hostname", a)
	}
	doc := readDoc(t, "docs/install/managed.md")
	for _, want := range []string{"## Hetzner Cloud", file, "ipMode: Proxy", "## GKE", "## AKS"} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/install/managed.md lacks %q", want)
		}
	}
}

// TestNotesNameTheValuesInUse (issue 21, 8 and 10): NOTES.txt names the
// service account and targets namespace of the values, and the flag that
// points CoreDNS at another targets namespace.
func TestNotesNameTheValuesInUse(t *testing.T) {
	// helm renders NOTES.txt only when installing, and an install, even a
	// dry run, asks an API server for its version.
	h := harness.RequireHelm(t).WithKubeconfig(newControlPlane(t).Kubeconfig)
	tests := []struct {
		name      string
		namespace string
		set       []string
		want      []string
		notWant   []string
	}{
		{"tenant mode with another service account", releaseNamespace,
			[]string{defaultZones, `tenant.enabled=true`, `coredns.serviceAccount={"namespace":"kube-system","name":"kube-dns"}`},
			[]string{"service account kube-system/kube-dns"}, []string{"kube-system/coredns behind"}},
		{"another release namespace", "edge", []string{defaultZones},
			[]string{"-hairpin.targets=edge", "COREDNS_HAIRPIN_TARGETS=edge"}, []string{"targets edge }"}},
		{"the docs namespace needs no flag", releaseNamespace, []string{defaultZones},
			[]string{"service account kube-system/coredns"}, []string{"-hairpin.targets"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"install", releaseName, chartDir(t), "--dry-run=client", "--namespace", tt.namespace}
			out, err := h.Run(t.Context(), append(args, valuesCase{set: tt.set}.args()...)...)
			if err != nil {
				t.Fatal(err)
			}
			_, notes, ok := strings.Cut(out, "NOTES:")
			if !ok {
				t.Fatalf("no NOTES in:\n%.2000s", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(notes, w) {
					t.Errorf("NOTES lack %q:\n%s", w, notes)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(notes, w) {
					t.Errorf("NOTES say %q:\n%s", w, notes)
				}
			}
		})
	}
}

// TestChartREADMEShowsTheRenderedLabel (issue 21, 10): the target label
// value the chart README gives is what the chart renders.
func TestChartREADMEShowsTheRenderedLabel(t *testing.T) {
	readme := readDoc(t, filepath.Join("manifests", "coredns-hairpin", "README.md"))
	_, rest, ok := strings.Cut(readme, "label `"+targetLabel+": ")
	if !ok {
		t.Fatalf("the chart README gives no value of the label %s", targetLabel)
	}
	documented, _, _ := strings.Cut(rest, "`")
	svc := find[*corev1.Service](render(t, valuesCase{set: []string{defaultZones}}), "ingress-nginx")
	if svc == nil {
		t.Fatal("no target Service ingress-nginx")
	}
	if got := svc.Labels[targetLabel]; strings.Trim(documented, `"`) != got {
		t.Errorf("the README says %s: %s; the chart renders %q", targetLabel, documented, got)
	}
}

// TestChartTestingValuesLint (issue 21, 11): the chart ships ci/*-values.yaml
// for chart-testing, each lints (TestHelmLint runs them with every other
// case), and the chart README says what they are for.
func TestChartTestingValuesLint(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir(t), "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ci/*-values.yaml in the chart (%v)", err)
	}
	h := harness.RequireHelm(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if out, err := h.Run(t.Context(), "lint", "--strict", chartDir(t), "--values", f); err != nil {
				t.Errorf("%v\n%s", err, out)
			}
		})
	}
	if !strings.Contains(readDoc(t, filepath.Join("manifests", "coredns-hairpin", "README.md")), "ci/*-values.yaml") {
		t.Error("the chart README does not say what ci/*-values.yaml are")
	}
}

// TestValuesTableIsCurrent (issue 21, 12): the chart README's values table
// is what build/chartdoc writes from values.yaml (`make manifests`), one row
// per key with type, default and description.
func TestValuesTableIsCurrent(t *testing.T) {
	want, err := chartdoc.Render(chartDir(t))
	if err != nil {
		t.Fatal(err)
	}
	got := []byte(readDoc(t, filepath.Join("manifests", "coredns-hairpin", "README.md")))
	if !bytes.Equal(got, want) {
		t.Errorf("the chart README's values table is stale; run `make manifests`\n%s", firstDiff(got, want))
	}
	rows, err := chartdoc.Rows([]byte(readDoc(t, filepath.Join("manifests", "coredns-hairpin", "values.yaml"))))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range rows {
		keys = append(keys, r.Key)
	}
	for _, k := range []string{"proxy.image.repository", "proxy.image.digest", "networkPolicy.dns.podSelector", "targets.ingress-nginx.zones", "tenant.image.digest"} {
		if !slices.Contains(keys, k) {
			t.Errorf("the values table has no row %s", k)
		}
	}
}

// TestMonitoringAdmitsItsScrape (issue 34, 7): with the ServiceMonitor on,
// the proxy's NetworkPolicy admits the health port that it scrapes, from
// networkPolicy.metricsFrom when that names the scrapers, else from any
// pod (Prometheus's namespace is not known); with it off and no
// metricsFrom, the port stays closed. A CNI that enforces policy (Cilium on
// Cozystack) would otherwise drop every scrape of the Cozystack example.
func TestMonitoringAdmitsItsScrape(t *testing.T) {
	admits := func(objs []apiruntime.Object) (open, fromAnyone bool) {
		np := find[*netv1.NetworkPolicy](objs, proxyName)
		if np == nil {
			t.Fatal("no proxy NetworkPolicy")
		}
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if p.Port != nil && p.Port.IntVal == 9090 {
					open = true
					fromAnyone = fromAnyone || len(rule.From) == 0
				}
			}
		}
		return open, fromAnyone
	}
	tests := []struct {
		name             string
		c                valuesCase
		open, fromAnyone bool
	}{
		{"monitoring off", valuesCase{set: []string{defaultZones}}, false, false},
		{"ServiceMonitor on", valuesCase{set: []string{defaultZones, `serviceMonitor.enabled=true`}}, true, true},
		{"ServiceMonitor on, scrapers named", valuesCase{set: []string{defaultZones, `serviceMonitor.enabled=true`,
			`networkPolicy.metricsFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]`}}, true, false},
		{"the Cozystack management example", example(t, "cozystack-management.yaml"), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open, fromAnyone := admits(render(t, tt.c))
			if open != tt.open || fromAnyone != tt.fromAnyone {
				t.Errorf("health port 9090 admitted %v, from anyone %v; want %v, %v", open, fromAnyone, tt.open, tt.fromAnyone)
			}
		})
	}
}
