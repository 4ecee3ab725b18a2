package dataplane_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/coredns-hairpin/hairpin/test/dataplane"
	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// cozyDomain is the cluster domain of Cozystack's management cluster (its
// networking.clusterDomain default).
const cozyDomain = "cozy.local"

// cozyDataplane is the Cozystack management cluster's dataplane: Cilium as
// kube-proxy replacement.
const cozyDataplane = "cilium"

// cozyControllers are Cozystack's ingress controllers as its ingress
// package names them (fullname <tenant>-ingress, the class named after the
// namespace): the root tenant's, exposed through spec.externalIPs as
// publishing.externalIPs exposes it, and tenant-foo's behind a
// LoadBalancer IP. examples/cozystack-management.yaml targets the root
// tenant's; the story adds tenant-foo's on the command line.
var cozyControllers = []cluster.IngressController{
	{Namespace: "tenant-root", Name: "root-ingress-controller", Class: "tenant-root", Hosts: []string{"keycloak.example.org"},
		LBIP: netip.MustParseAddr("203.0.113.20"), ExternalIP: true},
	{Namespace: "tenant-foo", Name: "foo-ingress-controller", Class: "tenant-foo", Hosts: []string{"shop.foo.example.org"},
		LBIP: netip.MustParseAddr("203.0.113.21")},
}

// TestCozystackManagementCluster is the fix on Cozystack's management
// cluster as it ships: Cilium as kube-proxy replacement, Talos's stock
// Corefile, the cluster domain cozy.local, the root ingress exposed
// through spec.externalIPs, and the chart installed with
// examples/cozystack-management.yaml as written, its zones and tenant-foo's
// target on the command line (ServiceMonitor and
// PrometheusRule on, over prometheus-operator's CRDs), its NetworkPolicy
// enforced by Cilium. The domain is a property of the cluster from its
// start (kubelet's --cluster-domain, every Pod's search path), so the
// story runs on a cluster of its own rather than the shared cilium one;
// its one subtest is named after the mode, as every dataplane story's.
func TestCozystackManagementCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: a whole cluster")
	}
	if !slices.Contains(cluster.Dataplanes, cozyDataplane) {
		t.Skipf("the %s dataplane is left out: %s", cozyDataplane, cluster.EnvDataplanes)
	}
	t.Run(cozyDataplane, cozystackStory)
}

func cozystackStory(t *testing.T) {
	start := time.Now()
	defer func() { t.Logf("%s: %s", t.Name(), time.Since(start).Round(time.Millisecond)) }()
	e := startCozystack(t, "cozy", cozyControllers)
	t.Logf("the Cozystack-shaped cluster is up %s after the start", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	root, foo := cozyControllers[0], cozyControllers[1]
	step := func(name string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			t.FailNow()
		}
	}

	step("TheClusterIsCozystacks", func(t *testing.T) {
		procs, err := e.NodeProcesses()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(procs, "cilium-agent") || slices.Contains(procs, "kube-proxy") {
			t.Fatalf("the node runs %v; want cilium-agent and no kube-proxy", procs)
		}
		// Pods search cozy.local, and Talos's Corefile serves it.
		conf, _, err := e.Nodes[0].Exec(ctx, "default", dataplane.ClientPod, "client", "cat", "/etc/resolv.conf")
		if want := "search default.svc.cozy.local svc.cozy.local cozy.local"; err != nil || !strings.Contains(conf, want) {
			t.Errorf("the client pod's resolv.conf %q (%v); want %q", conf, err, want)
		}
		if !strings.Contains(e.Corefile, "kubernetes cozy.local in-addr.arpa ip6.arpa {") || !strings.Contains(e.Corefile, "log . {\n        class error\n    }") {
			t.Errorf("kube-dns does not run Talos's Corefile for cozy.local:\n%s", e.Corefile)
		}
		if got, err := e.Resolve(ctx, "kubernetes.default"); err != nil || len(got) != 1 || got[0] != cluster.KubernetesIP {
			t.Errorf("kubernetes.default from the client pod resolves to %v (%v); want %s (kubernetes.default.svc.cozy.local)", got, err, cluster.KubernetesIP)
		}
		svc, err := e.CP.Clientset.CoreV1().Services(root.Namespace).Get(ctx, root.Service(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if svc.Spec.Type != "ClusterIP" || !slices.Equal(svc.Spec.ExternalIPs, []string{root.LBIP.String()}) {
			t.Errorf("%s/%s is %s with externalIPs %v; want ClusterIP with [%s]", root.Namespace, root.Service(), svc.Spec.Type, svc.Spec.ExternalIPs, root.LBIP)
		}
		// Cilium programs the externalIP as a frontend, as it does the
		// LoadBalancer IP.
		if err := waitFrontends(ctx, e, []netip.Addr{root.LBIP, foo.LBIP}, nil); err != nil {
			t.Fatal(err)
		}
	})

	step("BrokenWithoutHairpin", func(t *testing.T) {
		// The externalIP is short-circuited where a LoadBalancer IP is.
		brokenAndTranslated(ctx, t, e, cozyControllers)
	})

	step("CheckFailsBeforeInstallNamingBothControllers", func(t *testing.T) {
		checkFailsNamingEveryController(ctx, t, e, cozyControllers)
	})

	step("InstallTheCozystackExample", func(t *testing.T) {
		// As written: the test cluster has Cozystack's names (namespaces,
		// Services, classes, pod labels, CoreDNS's ServiceAccount). The
		// example ships the root tenant's target without zones; the
		// command line gives them, as the docs do, and adds tenant-foo's
		// target in the example's shape, as an operator adds a tenant.
		tenantFoo := `{"zones":["foo.example.org"],"ingressClasses":["tenant-foo"],"upstream":{"namespace":"tenant-foo","name":"foo-ingress-controller",` +
			`"podSelector":{"app.kubernetes.io/name":"ingress-nginx","app.kubernetes.io/component":"controller"},` +
			`"ports":[{"name":"http","port":80,"containerPort":8081},{"name":"https","port":443,"containerPort":8444}]}}`
		installExample(ctx, t, e, "cozystack-management.yaml",
			"--set-json", `targets.tenant-root.zones=["example.org"]`, "--set-json", "targets.tenant-foo="+tenantFoo)
		for _, kind := range monitoringKinds {
			if n, err := countObjects(ctx, e, kind); err != nil || n == 0 {
				t.Errorf("%s in %s: %d (%v); the example turns it on", kind.Resource, dataplane.TargetNamespace, n, err)
			}
		}
		if _, err := e.CP.Clientset.NetworkingV1().NetworkPolicies(dataplane.TargetNamespace).Get(ctx, "hairpin-proxy", metav1.GetOptions{}); err != nil {
			t.Errorf("the chart's NetworkPolicy: %v", err)
		}
	})

	step("FixedEachHostReachesItsOwnController", func(t *testing.T) {
		fixedEachHostReachesItsOwnController(ctx, t, e, cozyControllers)
	})

	step("CiliumEnforcesTheChartsNetworkPolicy", func(t *testing.T) {
		enforced(ctx, t, e, root)
	})

	step("CheckPassesAfterInstall", func(t *testing.T) {
		checkNamesTheDataplane(t, checkPassesAfterInstall(ctx, t, e), e.Capabilities(), cozyControllers)
	})

	step("UninstallRestoresThePublicAnswersAndLeavesNothing", func(t *testing.T) {
		uninstallRestoresThePublicAnswers(ctx, t, e, cozyControllers)
		for _, kind := range monitoringKinds {
			if n, err := countObjects(ctx, e, kind); err != nil || n != 0 {
				t.Errorf("%s left in %s: %d (%v)", kind.Resource, dataplane.TargetNamespace, n, err)
			}
		}
	})

	step("TheChecksInstallCommandInstalls", func(t *testing.T) {
		checksInstallCommandInstalls(ctx, t, e, cozyControllers)
	})

	runCozystackRunbook(t, e, "cozystack-management", cozyControllers)
}

// startCozystack starts a cluster of the shape of Cozystack's management
// cluster: Cilium as kube-proxy replacement, Talos's stock Corefile for
// cozy.local, Cozystack's two ingress controllers, prometheus-operator's
// CRDs for the chart's example, and crds, further CRD folders. controllers
// are Cozystack's ingress controllers it runs (cozyControllers, or the root
// tenant's alone). Its name is
// unique among the clusters that run side by side (TestMain): it names the
// node's network namespaces and cgroup.
func startCozystack(t *testing.T, name string, controllers []cluster.IngressController, crds ...string) *dataplane.Env {
	return dataplane.StartWith(t, dataplane.Config{
		Mode: cozyDataplane, Name: name, Distribution: "talos", ClusterDomain: cozyDomain,
		Controllers: controllers, CRDDirs: append([]string{dataplane.MonitoringCRDs(t)}, crds...),
	})
}

// enforced shows that Cilium enforces the chart's NetworkPolicy on every
// proxy Pod, in both directions, with the Pods' own sockets: what it
// admits passes (the hairpin request, DNS from kube-dns, the controller's
// ports) and what it does not is dropped (the policy's deny is a drop, so
// a refused connection times out rather than being reset), while the same
// connections from the client Pod, which no policy selects, pass.
func enforced(ctx context.Context, t *testing.T, e *dataplane.Env, ic cluster.IngressController) {
	t.Helper()
	// The agent's mode, as the chart Cozystack installs it with leaves it:
	// a NetworkPolicy that selects an endpoint is enforced on it.
	cm, err := e.CP.Clientset.CoreV1().ConfigMaps(cluster.CiliumNamespace).Get(ctx, "cilium-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mode, k8s := cm.Data["enable-policy"], cm.Data["enable-k8s-networkpolicy"]; mode != "default" || k8s != "true" {
		t.Fatalf("cilium-config has enable-policy %q and enable-k8s-networkpolicy %q; want default and true", mode, k8s)
	}
	pods, err := e.CP.Clientset.CoreV1().Pods(dataplane.TargetNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=proxy"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("proxy pods: %d, %v", len(pods.Items), err)
	}
	client, ok := e.Nodes[0].PodNetwork("default", dataplane.ClientPod)
	if !ok {
		t.Fatal("the client pod has no network namespace")
	}
	backends, err := controllerPodIPs(ctx, e, ic)
	if err != nil || len(backends) == 0 {
		t.Fatalf("%s's controller pods: %v, %v", ic.Namespace, backends, err)
	}
	admitted := netip.AddrPortFrom(backends[0], 80)       // a port of the policy's egress rule
	notAdmitted := netip.AddrPortFrom(backends[0], 10254) // the controller's health port: not in it
	upstream := ic.Service() + "." + ic.Namespace + ".svc." + cozyDomain
	for _, p := range pods.Items {
		t.Run(p.Name, func(t *testing.T) {
			if got, err := e.CiliumPolicyEnforcement(ctx, p.Namespace, p.Name); err != nil || got != "both" {
				t.Errorf("cilium-agent enforces %q on %s (%v); want both (ingress and egress)", got, p.Name, err)
			}
			proxy, ok := e.Nodes[0].PodNetwork(p.Namespace, p.Name)
			if !ok {
				t.Fatalf("%s has no network namespace", p.Name)
			}
			ip, _ := netip.ParseAddr(p.Status.PodIP)
			// Egress: to the controller's Pod on the policy's port, not on
			// another; the client Pod reaches both.
			if err := dial(ctx, proxy, admitted); err != nil {
				t.Errorf("%s to %s (admitted): %v", p.Name, admitted, err)
			}
			if err := dial(ctx, proxy, notAdmitted); !isTimeout(err) {
				t.Errorf("%s to %s (not admitted): %v; want it dropped (a timeout)", p.Name, notAdmitted, err)
			}
			if err := dial(ctx, client, notAdmitted); err != nil {
				t.Errorf("the client pod to %s: %v; nothing restricts it", notAdmitted, err)
			}
			// DNS: kube-dns answers the proxy's own upstream name; the
			// public DNS, which the policy does not admit, never hears it.
			// kube-dns's ClusterIP is translated at connect, for the
			// node's processes: dig in the proxy's namespace is one.
			if out, err := proxy.Run("dig", "+time=2", "+tries=1", "+short", "@"+cluster.DNSIP.String(), upstream, "A"); err != nil || len(strings.Fields(out)) != 1 {
				t.Errorf("%s asks kube-dns for %s: %q, %v; want its ClusterIP", p.Name, upstream, out, err)
			}
			public := netip.AddrPortFrom(cluster.PublicDNSIP, 53).String()
			if _, err := cluster.Exchange(ctx, proxy, public, ic.Hosts[0], dns.TypeA); !isTimeout(err) {
				t.Errorf("%s asks the public DNS %s: %v; want it dropped (a timeout)", p.Name, public, err)
			}
			if _, err := cluster.Exchange(ctx, client, public, ic.Hosts[0], dns.TypeA); err != nil {
				t.Errorf("the client pod asks the public DNS %s: %v; nothing restricts it", public, err)
			}
			// Ingress: a port of the proxy Pod that the policy does not
			// open refuses the client Pod, which the route ports admit.
			l, err := proxy.Listen("tcp", ":7070")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
			if err := dial(ctx, proxy, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), 7070)); err != nil {
				t.Errorf("the listener on :7070 in %s: %v", p.Name, err)
			}
			if err := dial(ctx, client, netip.AddrPortFrom(ip, 7070)); !isTimeout(err) {
				t.Errorf("the client pod to %s:7070 (not admitted): %v; want it dropped (a timeout)", ip, err)
			}
			if err := dial(ctx, client, netip.AddrPortFrom(ip, 8080)); err != nil {
				t.Errorf("the client pod to %s:8080 (a route port): %v", ip, err)
			}
		})
	}
}

// dropWait is how long a connection may take before it counts as dropped
// (a DNS query gets cluster.Exchange's 2 s): far above anything a Pod on
// this node answers in.
const dropWait = 3 * time.Second

// dial connects from ns to addr and closes the connection.
func dial(ctx context.Context, ns *netns.NS, addr netip.AddrPort) error {
	ctx, cancel := context.WithTimeout(ctx, dropWait)
	defer cancel()
	c, err := ns.DialContext(ctx, "tcp", addr.String())
	if err != nil {
		return err
	}
	return c.Close()
}

// isTimeout reports whether err is a timeout: what a dropped packet gives,
// where a closed port gives a reset.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// monitoringKinds are the prometheus-operator objects the example turns on.
var monitoringKinds = []schema.GroupVersionResource{
	{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"},
	{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheusrules"},
}

// countObjects counts the objects of kind in the targets namespace.
func countObjects(ctx context.Context, e *dataplane.Env, kind schema.GroupVersionResource) (int, error) {
	dc, err := dynamic.NewForConfig(e.CP.Config)
	if err != nil {
		return 0, err
	}
	list, err := dc.Resource(kind).Namespace(dataplane.TargetNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return len(list.Items), nil
}
