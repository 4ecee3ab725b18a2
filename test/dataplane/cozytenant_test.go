package dataplane_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/coredns-hairpin/hairpin/test/dataplane"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
)

// tenantControllers are the tenant cluster's ingress controllers: its own
// ingress-nginx, exposed through a LoadBalancer IP behind the outside
// load balancer that sends PROXY.
var tenantControllers = []cluster.IngressController{dataplane.CozyTenantIngress}

// TestCozystackTenantCluster is the fix on a Cozystack tenant cluster as
// packages/apps/kubernetes renders one: Cilium the only CNI, as kube-proxy
// replacement with no kube-proxy, in tunnel mode with masquerade
// (cluster.CozyTenant), Cozystack's own CoreDNS with our image, the
// platform's cozy.local after cluster.local in every Pod's search path,
// and the tenant's ingress-nginx with PROXY. The story is the management
// cluster's: broken, the chart installed with examples/cozystack-tenant.yaml
// and the zone on the command line, fixed, uninstalled. Its one subtest is
// named after the shape.
func TestCozystackTenantCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: a whole cluster")
	}
	dp, err := cluster.DataplaneNamed(cluster.CozyTenant)
	if err != nil {
		t.Fatal(err)
	}
	if !cluster.Covers(dp) {
		t.Skipf("the %s dataplane, of which %s is a shape, is left out: %s", dp.Mode(), dp.Name(), cluster.EnvDataplanes)
	}
	t.Run(dp.Name(), func(t *testing.T) { cozystackTenantStory(t, dp) })
}

// tenantZone gives the tenant's zone to the install on the command line.
var tenantZone = []string{"--set-json", `targets.ingress-nginx.zones=["` + dataplane.CozyTenantZone + `"]`}

func cozystackTenantStory(t *testing.T, dp cluster.Dataplane) {
	start := time.Now()
	defer func() { t.Logf("%s: %s", t.Name(), time.Since(start).Round(time.Millisecond)) }()
	e := dataplane.StartWith(t, dataplane.Config{
		Mode: cluster.CozyTenant, Distribution: dataplane.CozyTenantDistribution,
		Controllers: tenantControllers, HostSearch: []string{dataplane.CozyPlatformDomain},
		CRDDirs: []string{dataplane.CozystackCRDs(t)},
	})
	t.Logf("the Cozystack tenant cluster is up %s after the start", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	ic := dataplane.CozyTenantIngress
	caps := e.Capabilities()
	// No kube-proxy runs at any point of the story: the node's processes
	// are read after every step.
	step := func(name string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			t.FailNow()
		}
		if procs, err := e.NodeProcesses(); err != nil || slices.Contains(procs, "kube-proxy") {
			t.Fatalf("after %s the node runs %v (%v); a tenant runs no kube-proxy", name, procs, err)
		}
	}
	// The lifecycle on the tenant: its adoption, install, a CoreDNS
	// rollout and its uninstall, counted by the steady clients with
	// TestLifecycleLosesNoRequest's goals, are this story's own steps.
	life := newLifecycleRun(ctx, t, dp.Name(), e, tenantControllers, []string{"ingress-nginx"}, func(ctx context.Context, t testing.TB) (string, error) {
		return installExampleValues(ctx, t, e, "cozystack-tenant.yaml", tenantZone...)
	})
	defer func() { life.t = t; life.stop(start) }()
	lifeStep := func(name string, fn func()) {
		step(name, func(t *testing.T) { life.t = t; fn() })
	}

	step("TheDataplaneIsATenantsCilium", func(t *testing.T) {
		procs, err := e.NodeProcesses()
		if err != nil {
			t.Fatal(err)
		}
		if !caps.KubeProxyReplacement || !slices.Contains(procs, caps.Agent) || slices.Contains(procs, "kube-proxy") {
			t.Fatalf("the node runs %v (kube-proxy replacement %v); want %s and no kube-proxy", procs, caps.KubeProxyReplacement, caps.Agent)
		}
		cm, err := e.CP.Clientset.CoreV1().ConfigMaps(cluster.CiliumNamespace).Get(ctx, "cilium-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for key, want := range map[string]string{
			"routing-mode": "tunnel", "mtu": "1350", "enable-ipv4-masquerade": "true", "kube-proxy-replacement": "true",
		} {
			if got := cm.Data[key]; got != want {
				t.Errorf("cilium-config %s = %q; want %q", key, got, want)
			}
		}
		if mode := cm.Data["cni-chaining-mode"]; mode != "" && mode != "none" {
			t.Errorf("cilium-config cni-chaining-mode = %q; a tenant's Cilium is the only CNI", mode)
		}
		// Tunnel mode has its device; on one node every Pod is local, so
		// it carries nothing.
		if _, err := e.NodeNS.IP("link", "show", "cilium_vxlan"); err != nil {
			t.Errorf("no tunnel device in the node: %v", err)
		}
		// Pods leave the node as the node: outside has no route back to
		// them, and still kube-dns's Pods get the public DNS's answers.
		if !caps.MasqueradesPods {
			t.Fatal("the tenant's Cilium does not masquerade its Pods")
		}
		if out, err := e.Outside.IP("route", "get", e.ClientIP().String()); err == nil {
			t.Errorf("outside routes the client pod %s: %s; with masquerade it needs no route to the Pods", e.ClientIP(), out)
		}
		if err := e.WaitResolves(ctx, ic.Hosts[0], ic.LBIP); err != nil {
			t.Errorf("kube-dns forwarding to the public DNS from its Pods: %v", err)
		}
		if err := waitFrontends(ctx, e, []netip.Addr{ic.LBIP}, nil); err != nil {
			t.Fatal(err)
		}
	})

	step("TheTenantsCoreDNSIsCozystacks", func(t *testing.T) {
		cozystacksCoreDNS(ctx, t, e)
	})

	step("PodsSearchTheClusterDomainThenThePlatforms", func(t *testing.T) {
		want := "search default.svc.cluster.local svc.cluster.local cluster.local " + dataplane.CozyPlatformDomain + "\n"
		for _, pod := range []string{dataplane.ClientPod, dataplane.HostClientPod} {
			conf, _, err := e.Nodes[0].Exec(ctx, "default", pod, "client", "cat", "/etc/resolv.conf")
			if err != nil || !strings.HasPrefix(conf, want) || !strings.Contains(conf, "options ndots:5") {
				t.Errorf("the %s pod's resolv.conf %q (%v); want it to start %q, with ndots:5", pod, conf, err, want)
			}
		}
		// A short name of the cluster and one of the platform's domain
		// resolve through the search path.
		if got, err := e.Resolve(ctx, "kubernetes.default"); err != nil || !slices.Equal(got, []netip.Addr{cluster.KubernetesIP}) {
			t.Errorf("kubernetes.default from the client pod: %v (%v); want %s", got, err, cluster.KubernetesIP)
		}
		platform, addr := "registry."+dataplane.CozyPlatformDomain, netip.MustParseAddr("203.0.113.60")
		if err := e.SetPublicName(platform, addr); err != nil {
			t.Fatal(err)
		}
		defer e.DeletePublicName(platform)
		if err := harness.Poll(ctx, func(ctx context.Context) error {
			got, err := e.Resolve(ctx, "registry")
			if err != nil || !slices.Equal(got, []netip.Addr{addr}) {
				return fmt.Errorf("registry resolves to %v (%v); want %s (%s)", got, err, addr, platform)
			}
			return nil
		}); err != nil {
			t.Error(err)
		}
	})

	step("BrokenWithoutHairpin", func(t *testing.T) {
		brokenAndTranslated(ctx, t, e, tenantControllers)
	})

	// Cozystack's CoreDNS goes back to its stock image, and our image
	// comes in as examples/cozystack-coredns/values.yaml swaps it: the
	// addon renders the image of its coredns.image values.
	lifeStep("AdoptionThroughTheCoreDNSValues", func() {
		image := cozystackCoreDNSValuesImage(life.t, e)
		life.onStockCoreDNS()
		life.startClients()
		life.adoption(image)
	})

	step("CheckFailsBeforeInstallNamingTheController", func(t *testing.T) {
		checkFailsNamingEveryController(ctx, t, e, tenantControllers)
		r := check(ctx, t, e)
		t.Logf("kubectl hairpin check before the install (exit %d):\n%s", r.Exit, r.Table)
		checkReadsTheTenant(t, e, r)
		// Broken: which host, and why (the controller requires PROXY,
		// Cilium short-circuits its address, no target selects its class,
		// and CoreDNS may not list Ingresses yet: the chart grants that).
		for _, want := range []checkLine{
			{"controllers-found", "ok", `ingress-nginx deployment/cozy-ingress-nginx/ingress-nginx-controller requires PROXY (ConfigMap cozy-ingress-nginx/ingress-nginx-controller: use-proxy-protocol: "true"); it serves ingress class "nginx"`},
			{"ingress-class-target", "fail", `ingress class "nginx" is served by a controller that requires PROXY, and no target selects it`},
			{"hosts-unselected", "warn", `1 object of ingress class "nginx" names hosts that no target selects, so they are not answered: ` + ic.Hosts[0]},
			{"targets-found", "fail", "no target in hairpin-system (Services labelled hairpin.coredns-hairpin.io/target), but 1 controller requires PROXY behind a short-circuited load balancer"},
			{"coredns-kinds", "fail", "hairpin has not listed ingress in coredns-"},
		} {
			want.in(t, r)
		}
	})

	// As written, with the tenant's zone on the command line: the
	// example's names are the tenant's (cozy-ingress-nginx, class nginx,
	// CoreDNS's ServiceAccount kube-dns).
	lifeStep("InstallTheTenantExampleWithItsZone", life.install)

	step("FixedTheHostReachesItsController", func(t *testing.T) {
		fixedEachHostReachesItsOwnController(ctx, t, e, tenantControllers)
	})

	step("TheSearchPathChangesNoHairpinAnswer", func(t *testing.T) {
		// ndots 5: the host tries every cluster.local entry and
		// cozy.local before itself, and gets its target all the same.
		target, err := e.TargetIP(ctx, ic)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.Resolve(ctx, ic.Hosts[0]); err != nil || !slices.Equal(got, []netip.Addr{target}) {
			t.Errorf("%s through the client pod's search path: %v (%v); want its target %s", ic.Hosts[0], got, err, target)
		}
		// The host under a search domain is no hairpin host: NXDOMAIN,
		// as before the install, from every domain of the path.
		for _, domain := range []string{"default.svc.cluster.local", "cluster.local", dataplane.CozyPlatformDomain} {
			if got, err := e.ResolveAt(ctx, cluster.DNSIP, ic.Hosts[0]+"."+domain); err != nil || len(got) != 0 {
				t.Errorf("%s.%s: %v (%v); want no address", ic.Hosts[0], domain, got, err)
			}
		}
		// And a Pod's short names resolve as before the install.
		if got, err := e.Resolve(ctx, "kubernetes.default"); err != nil || !slices.Equal(got, []netip.Addr{cluster.KubernetesIP}) {
			t.Errorf("kubernetes.default from the client pod after the install: %v (%v); want %s", got, err, cluster.KubernetesIP)
		}
	})

	lifeStep("CoreDNSRolloutLosesNoRequest", life.coreDNSRollout)

	step("CheckPassesAfterInstall", func(t *testing.T) {
		r := checkPassesAfterInstall(ctx, t, e)
		t.Logf("kubectl hairpin check after the install (exit %d):\n%s", r.Exit, r.Table)
		checkNamesTheDataplane(t, r, caps, tenantControllers)
		checkReadsTheTenant(t, e, r)
		for _, want := range []checkLine{
			{"ingress-class-target", "ok", `ingress class "nginx" is served by a controller that requires PROXY, and target hairpin-system/ingress-nginx selects it`},
			{"targets-found", "ok", "1 target in hairpin-system: ingress-nginx"},
			{"coredns-targets", "ok", "CoreDNS serves 1 target"},
			{"hosts-unselected", "ok", "every object that names hosts is selected by a target"},
			{"target-unnecessary", "ok", "no target fronts a controller that needs no hairpin"},
		} {
			want.in(t, r)
		}
		if fails := r.Failures(); len(fails) > 0 {
			t.Errorf("failures after the install: %+v", fails)
		}
	})

	lifeStep("UninstallRestoresThePublicAnswerAndLeavesNothing", life.uninstall)

	step("TheLifecycleLosesNoRequest", func(t *testing.T) {
		life.t = t
		life.stop(start)
	})

	// The runbook of docs/install/cozystack.md's tenant section, from the
	// check on a cluster without hairpin to the rollback, before the
	// Proxied shape changes how the tenant's ingress is exposed.
	runCozystackRunbook(t, e, "cozystack-tenant", tenantControllers)

	// The same tenant with exposeMethod Proxied: its ingress-nginx, still
	// requiring PROXY, is a NodePort Service behind the management
	// cluster's ingress, whose address the tenant's dataplane does not
	// know. Its Pods reach the host by the public address, with the
	// header, and the check says that no fix is needed, and why.
	step("ProxiedNeedsNoFix", func(t *testing.T) {
		if err := e.ExposeProxied(ctx, ic, dataplane.CozyManagementIngressIP); err != nil {
			t.Fatal(err)
		}
		if err := e.WaitResolves(ctx, ic.Hosts[0], dataplane.CozyManagementIngressIP); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ pod, url string }{
			{dataplane.ClientPod, "http://" + ic.Hosts[0] + "/"}, {dataplane.ClientPod, "https://" + ic.Hosts[0] + "/"},
			{dataplane.HostClientPod, "http://" + ic.Hosts[0] + "/"},
		} {
			if body, err := e.WaitCurlFrom(ctx, c.pod, c.url); err != nil || !strings.Contains(body, "controller="+ic.Namespace) {
				t.Errorf("%s from the %s pod through the management ingress: %q, %v; want controller=%s", c.url, c.pod, body, err, ic.Namespace)
			}
		}
		r := check(ctx, t, e)
		t.Logf("kubectl hairpin check with exposeMethod Proxied (exit %d):\n%s", r.Exit, r.Table)
		if r.Exit != 0 {
			t.Errorf("kubectl hairpin check exited %d with exposeMethod Proxied; want 0: no fix is needed", r.Exit)
		}
		why := "nothing is short-circuited: cozy-ingress-nginx/ingress-nginx-controller NodePort 30000, 30001 (no address of the dataplane's: in-cluster clients reach it through the load balancer outside, as outside clients do)"
		for _, want := range []checkLine{
			{"lb-status", "ok", "ingress-nginx deployment/cozy-ingress-nginx/ingress-nginx-controller needs no hairpin: " + why},
			{"ingress-class-target", "ok", `ingress class "nginx" needs no target: ` + why},
			{"dataplane", "ok", "the Service dataplane is Cilium " + caps.Version + " as kube-proxy replacement"},
			{"targets-found", "ok", "no target in hairpin-system (Services labelled hairpin.coredns-hairpin.io/target), and none is needed"},
			{"hosts-unselected", "ok", `1 object of ingress class "nginx" names hosts that no target selects, and need none: ` + why},
		} {
			want.in(t, r)
		}
		if fails := r.Failures(); len(fails) > 0 {
			t.Errorf("failures with exposeMethod Proxied: %+v", fails)
		}
	})
}

// cozystackCoreDNSValuesImage is the image that the Cozystack tenant's
// CoreDNS runs with examples/cozystack-coredns/values.yaml: the addon's
// coredns chart renders coredns.image.repository:tag. It is our image as
// the test cluster runs it.
func cozystackCoreDNSValuesImage(t *testing.T, e *dataplane.Env) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.Chart, "examples", "cozystack-coredns", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		CoreDNS struct {
			Image struct{ Repository, Tag string }
		} `json:"coredns"`
	}
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		t.Fatalf("examples/cozystack-coredns/values.yaml: %v", err)
	}
	image := v.CoreDNS.Image.Repository + ":" + v.CoreDNS.Image.Tag
	if image != e.CoreDNSImage() {
		t.Fatalf("examples/cozystack-coredns/values.yaml swaps in %s; the chart's CoreDNS is %s", image, e.CoreDNSImage())
	}
	return image
}

// checkLine is one line that kubectl hairpin check must print: its id,
// status and a piece of its message, in the JSON and in the table.
type checkLine struct{ id, status, message string }

// in fails t unless r has the line.
func (l checkLine) in(t *testing.T, r *dataplane.CheckReport) {
	t.Helper()
	of := map[string]func(string) []dataplane.CheckResult{"ok": r.Passed, "warn": r.Warned, "fail": r.Failed}[l.status](l.id)
	if !dataplane.Mentions(of, l.message) || !strings.Contains(r.Table, l.message) {
		t.Errorf("no %s line of %s says %q\n%s", l.status, l.id, l.message, r.Table)
	}
}

// checkReadsTheTenant fails t unless the check read the tenant's own
// CoreDNS (Cozystack's Deployment coredns behind kube-system/kube-dns, its
// Corefile with the import of the empty coredns-custom) and its Cilium in
// cozy-cilium, and named no kube-proxy: the tenant has none.
func checkReadsTheTenant(t *testing.T, e *dataplane.Env, r *dataplane.CheckReport) {
	t.Helper()
	for _, want := range []checkLine{
		{"coredns-pods", "ok", "CoreDNS runs behind kube-system/kube-dns: 2/2 pods ready, image " + e.CoreDNSImage() + " (deployment/kube-system/coredns)"},
		{"coredns-image", "ok", "CoreDNS runs a hairpin build (" + e.CoreDNSImage() + ")"},
		{"coredns-activation", "ok", "hairpin is active in every server block with kubernetes"},
		{"hosts-shadowed", "ok", "(0 name rewrite rules read in ConfigMap kube-system/coredns, key Corefile and the files it imports: import " + cluster.CustomDir + "/*.override, which no key of ConfigMap kube-system/coredns-custom matches)"},
		{"dataplane", "ok", `(ConfigMap ` + cluster.CiliumNamespace + `/cilium-config: kube-proxy-replacement: "true"; DaemonSet ` + cluster.CiliumNamespace + `/cilium: image `},
	} {
		want.in(t, r)
	}
	if strings.Contains(r.Table, "kube-proxy v") || strings.Contains(r.Table, "DaemonSet kube-system/kube-proxy") {
		t.Errorf("the check names a kube-proxy on a tenant that runs none:\n%s", r.Table)
	}
}

// cozystacksCoreDNS holds kube-dns to what Cozystack's coredns package
// renders, but for [dataplane.CozyTenantDeviations]: its whole Corefile,
// two replicas labelled k8s-app: kube-dns under the ServiceAccount
// kube-dns, our image, and coredns-custom with no data, mounted optional
// at /etc/coredns/custom.
func cozystacksCoreDNS(ctx context.Context, t *testing.T, e *dataplane.Env) {
	t.Helper()
	cs := e.CP.Clientset
	cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	corefile := cm.Data["Corefile"]
	if corefile != e.Corefile || !strings.Contains(corefile, "lameduck 10s") || !strings.Contains(corefile, "import "+cluster.CustomDir+"/*.override") {
		t.Errorf("kube-dns's Corefile is not Cozystack's whole server block:\n%s", corefile)
	}
	d, err := cs.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := d.Spec.Template.Spec
	if *d.Spec.Replicas != 2 || spec.ServiceAccountName != "kube-dns" || d.Spec.Template.Labels["k8s-app"] != "kube-dns" || spec.Containers[0].Image != e.CoreDNSImage() {
		t.Errorf("coredns: %d replicas, ServiceAccount %q, labels %v, image %q; want 2, kube-dns, k8s-app: kube-dns, %s",
			*d.Spec.Replicas, spec.ServiceAccountName, d.Spec.Template.Labels, spec.Containers[0].Image, e.CoreDNSImage())
	}
	mounted := slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
		src := v.ConfigMap
		return src != nil && src.Name == "coredns-custom" && src.Optional != nil && *src.Optional &&
			slices.ContainsFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == v.Name && m.MountPath == cluster.CustomDir })
	})
	if !mounted {
		t.Errorf("coredns does not mount coredns-custom optional at %s: %+v", cluster.CustomDir, spec.Volumes)
	}
	custom, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns-custom", metav1.GetOptions{})
	if err != nil || custom.Data != nil || custom.BinaryData != nil {
		t.Errorf("coredns-custom: %+v (%v); want it with no data at all", custom, err)
	}
	if err := e.WaitRolledOut(ctx, "kube-system", "coredns", d.Generation); err != nil {
		t.Errorf("coredns with its custom mount: %v", err)
	}
	svc, err := cs.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dev := dataplane.KubeDNSClusterIPDeviation; svc.Spec.ClusterIP != dev.Ours || !slices.ContainsFunc(dataplane.CozyTenantDeviations, func(d cluster.Deviation) bool { return d.Path == dev.Path }) {
		t.Errorf("kube-dns's ClusterIP is %s; the deviation table says ours is %s where Cozystack's is %s", svc.Spec.ClusterIP, dev.Ours, dev.Cozystack)
	}
}

// TestDocsKeepCozystacksTenantDNSAddress holds our Cozystack examples and
// docs to Cozystack's own kube-dns address, which the tenant test may not
// use ([dataplane.KubeDNSClusterIPDeviation]): wherever they name the
// tenant's DNS address (a Service IP of the cozystack-coredns addon), it
// is Cozystack's, and the test's own never leaks into them.
func TestDocsKeepCozystacksTenantDNSAddress(t *testing.T) {
	dev := dataplane.KubeDNSClusterIPDeviation
	repo := harness.RepoDir(t)
	examples, err := filepath.Glob(filepath.Join(repo, "manifests", "coredns-hairpin", "examples", "cozystack-*"))
	if err != nil || len(examples) == 0 {
		t.Fatalf("no Cozystack example (%v)", err)
	}
	var files []string
	for _, ex := range examples {
		err := filepath.WalkDir(ex, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	files = append(files, filepath.Join(repo, "docs", "tenant.md"), filepath.Join(repo, "docs", "install", "cozystack.md"))
	// "Service IP 10.95.0.10", "Service IP `10.95.0.10`": the address
	// after the words, whatever quotes it.
	serviceIP := regexp.MustCompile("Service IP\\W+(\\d+\\.\\d+\\.\\d+\\.\\d+)")
	named := 0
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text, rel := strings.Join(strings.Fields(string(b)), " "), strings.TrimPrefix(path, repo+"/")
		for _, m := range serviceIP.FindAllStringSubmatch(text, -1) {
			named++
			if m[1] != dev.Cozystack {
				t.Errorf("%s names the tenant's DNS address %s; Cozystack's is %s", rel, m[1], dev.Cozystack)
			}
		}
		if strings.Contains(text, fmt.Sprint(dev.Ours)) {
			t.Errorf("%s names the test cluster's kube-dns address %s; Cozystack's is %s", rel, dev.Ours, dev.Cozystack)
		}
	}
	// The tenant example, tenant.md and install/cozystack.md each name it.
	if named < 3 {
		t.Errorf("the Cozystack examples and docs name the tenant's DNS address %d times; want it in the tenant example, tenant.md and install/cozystack.md", named)
	}
}
