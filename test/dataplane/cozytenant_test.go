package dataplane_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	// Parallel (see TestMain): a cluster of its own that it mostly waits on.
	t.Parallel()
	t.Run(dp.Name(), cozystackTenantStory)
}

func cozystackTenantStory(t *testing.T) {
	start := time.Now()
	defer func() { t.Logf("%s: %s", t.Name(), time.Since(start).Round(time.Millisecond)) }()
	e := dataplane.StartWith(t, dataplane.Config{
		Mode: cluster.CozyTenant, Distribution: dataplane.CozyTenantDistribution,
		Controllers: tenantControllers, HostSearch: []string{dataplane.CozyPlatformDomain},
	})
	t.Logf("the Cozystack tenant cluster is up %s after the start", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	ic := dataplane.CozyTenantIngress
	caps := e.Capabilities()
	step := func(name string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			t.FailNow()
		}
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

	step("CheckFailsBeforeInstallNamingTheController", func(t *testing.T) {
		checkFailsNamingEveryController(ctx, t, e, tenantControllers)
	})

	step("InstallTheTenantExampleWithItsZone", func(t *testing.T) {
		// As written, with the tenant's zone on the command line: the
		// example's names are the tenant's (cozy-ingress-nginx, class
		// nginx, CoreDNS's ServiceAccount kube-dns).
		installExample(ctx, t, e, "cozystack-tenant.yaml", "--set-json", `targets.ingress-nginx.zones=["`+dataplane.CozyTenantZone+`"]`)
	})

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
	})

	step("CheckPassesAfterInstall", func(t *testing.T) {
		checkNamesTheDataplane(t, checkPassesAfterInstall(ctx, t, e), caps, tenantControllers)
	})

	step("UninstallRestoresThePublicAnswerAndLeavesNothing", func(t *testing.T) {
		uninstallRestoresThePublicAnswers(ctx, t, e, tenantControllers)
	})
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
