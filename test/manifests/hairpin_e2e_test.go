package manifests

// The chart end to end with our CoreDNS: these tests need the plugin's
// target discovery (docs/architecture.md, "Targets": Services labelled
// hairpin.coredns-hairpin.io/target in the namespace of `targets NAMESPACE`).
// They are written to that contract and fail on a plugin without it.

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// coreDNSUser is the identity our CoreDNS runs as against the test
// apiserver: RBAC matches ServiceAccount subjects by user name, so a client
// certificate with this name gets exactly what kube-system/coredns is bound
// to.
const coreDNSUser = "system:serviceaccount:kube-system:coredns"

// kubeadmCoreDNS is what a kubeadm cluster has before the chart: CoreDNS's
// own role for the kubernetes plugin. The hairpin plugin's permissions come
// from the chart alone.
const kubeadmCoreDNS = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects:
- {kind: ServiceAccount, name: coredns, namespace: kube-system}
`

// kubeadmCorefile is kubeadm's default Corefile with one explicit hairpin
// stanza that discovers the chart's targets.
const kubeadmCorefile = `.:53 {
    errors
    health {
        lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    hairpin {
        targets hairpin-system
    }
    prometheus :9153
    forward . /etc/resolv.conf {
        max_concurrent 1000
    }
    cache 30
    loop
    reload
    loadbalance
}
`

// tenantFoo is the target that the upgrade adds: a second controller on its
// own class and zone.
const tenantFoo = `targets.tenant-foo={"zones":["foo.example.org"],"ingressClasses":["tenant-foo"],` +
	`"upstream":{"namespace":"tenant-foo","name":"foo-ingress-controller","ports":[` +
	`{"name":"http","port":80,"containerPort":8081},{"name":"https","port":443,"containerPort":8444}]}}`

// publicIP is what the public DNS stand-in answers for every name of the
// test zones: the load balancer's address, which a pod must not get for a
// hairpin host while its target exists.
const publicIP = "203.0.113.10"

// publicCorefile is the public DNS stand-in: our CoreDNS binary with the
// stock template plugin, answering A for every name in the test zones with
// publicIP and NXDOMAIN for everything else (loop's probe included).
const publicCorefile = `.:%d {
    bind 127.0.0.1
    template IN A example.com example.net example.org {
        answer "{{ .Name }} 60 IN A ` + publicIP + `"
    }
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`

// startPublicDNS runs the public DNS stand-in and returns its address.
func startPublicDNS(t *testing.T) string {
	t.Helper()
	port := harness.FreePort(t, "127.0.0.1")
	path := harness.WriteFile(t, t.TempDir(), "Corefile", fmt.Sprintf(publicCorefile, port))
	proc := harness.StartProcess(t, "public-dns", harness.RequireBinary(t, "coredns"), "-conf", path)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := proc.Ready(ctx, harness.AProbe(addr, "app.example.com", netip.MustParseAddr(publicIP))); err != nil {
		t.Fatalf("public DNS: %v\n%s", err, proc.Output())
	}
	return addr
}

// createIngress creates an Ingress of class for host in namespace default.
func createIngress(t *testing.T, cp *harness.ControlPlane, name, class, host string) {
	t.Helper()
	ing := &netv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: netv1.IngressSpec{
			IngressClassName: &class,
			Rules:            []netv1.IngressRule{{Host: host}},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cp.Clientset.NetworkingV1().Ingresses("default").Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// clusterIP returns the ClusterIP of Service namespace/name, once it
// exists: kube-apiserver writes default/kubernetes itself, after it is up.
// serveTargets stands in for the EndpointSlice controller that envtest
// lacks: the chart's proxy is up behind every target, so the plugin answers
// with them.
func serveTargets(t *testing.T, cp *harness.ControlPlane) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := harness.ServeEndpointsOf(ctx, cp.Clientset, releaseNamespace, targetLabel); err != nil {
		t.Fatal(err)
	}
}

func clusterIP(t *testing.T, cp *harness.ControlPlane, namespace, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc, err := harness.PollGet(ctx, cp.Clientset.CoreV1().Services(namespace).Get, name)
	if err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

// waitA polls c until the A answer for name is want ("" for no A record),
// within timeout: long enough for `cache 30` to drop an entry of TTL 5.
func (c *coreDNS) waitA(t *testing.T, name, want string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := harness.Poll(ctx, func(ctx context.Context) error {
		r, err := harness.Exchange(ctx, c.addr, name, dns.TypeA)
		if err != nil {
			return err
		}
		if got := strings.Join(aRecords(r), ","); got != want {
			return fmt.Errorf("A %s = %q; want %q", name, got, want)
		}
		return nil
	})
	if err != nil {
		t.Errorf("%v\ncoredns output:\n%s", err, c.proc.Output())
	}
}

// TestHelmLifecycleServesHairpin installs the chart into a real apiserver
// that looks like a kubeadm cluster, runs our CoreDNS as kube-system/coredns
// with kubeadm's role for the kubernetes plugin and the chart's RBAC for
// hairpin, and checks with real DNS queries that:
//
//  1. after `helm install`, an Ingress host in the target's zones answers
//     with the rendered target Service's ClusterIP, and hosts outside the
//     zones or of another class do not;
//  2. `helm upgrade` adding a target makes its hosts answer with its own
//     ClusterIP, with no CoreDNS restart;
//  3. `helm uninstall` removes the targets, hairpin goes inert (no host is
//     answered by it any more), and CoreDNS logged no error throughout.
func TestHelmLifecycleServesHairpin(t *testing.T) {
	cp := newControlPlane(t)
	h := harness.RequireHelm(t).WithKubeconfig(cp.Kubeconfig)
	k := cli{t: t, kubectl: kubectl(t), kubeconfig: cp.Kubeconfig}
	k.run([]byte(kubeadmCoreDNS), "create", "-f", "-")
	createIngress(t, cp, "app", "nginx", "app.example.com")
	createIngress(t, cp, "foreign", "nginx", "app.example.net")
	createIngress(t, cp, "shop", "tenant-foo", "shop.foo.example.org")
	createIngress(t, cp, "www", "tenant-foo", "www.foo.example.org")
	kc, _, err := cp.UserKubeconfig(coreDNSUser, "system:serviceaccounts", "system:serviceaccounts:kube-system")
	if err != nil {
		t.Fatal(err)
	}

	chart := chartDir(t)
	h.MustRun(t, "install", releaseName, chart, "--namespace", releaseNamespace, "--create-namespace",
		"--set-json", defaultZones)
	serveTargets(t, cp)
	c, err := serveCorefile(t, kubeadmCorefile, nil, kc, startPublicDNS(t), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.proc.Stop()

	nginxIP := clusterIP(t, cp, releaseNamespace, "ingress-nginx")
	c.waitA(t, "app.example.com", nginxIP, 10*time.Second)
	// Outside the target's zones: the public answer, not the target.
	c.expect(t, dnsExpectation{name: "app.example.net", a: publicIP})
	// Another class, whose target does not exist yet: the public answer.
	// (A different host than the one asked after the upgrade, which `cache
	// 30` would otherwise serve from its cache for up to 30 s.)
	c.expect(t, dnsExpectation{name: "www.foo.example.org", a: publicIP})
	c.expect(t, dnsExpectation{name: "kubernetes.default.svc.cluster.local", a: clusterIP(t, cp, "default", "kubernetes")})

	t.Run("helm upgrade adds a target without a restart", func(t *testing.T) {
		h.MustRun(t, "upgrade", releaseName, chart, "--namespace", releaseNamespace,
			"--set-json", defaultZones, "--set-json", tenantFoo)
		serveTargets(t, cp)
		fooIP := clusterIP(t, cp, releaseNamespace, "tenant-foo")
		if fooIP == nginxIP {
			t.Fatalf("both targets have ClusterIP %s", fooIP)
		}
		c.waitA(t, "shop.foo.example.org", fooIP, 15*time.Second)
		c.waitA(t, "app.example.com", nginxIP, 5*time.Second)
		if exited, err := c.proc.Exited(); exited {
			t.Fatalf("coredns exited: %v", err)
		}
	})

	t.Run("helm uninstall makes hairpin inert", func(t *testing.T) {
		h.MustRun(t, "uninstall", releaseName, "--namespace", releaseNamespace, "--wait", "--timeout", "60s")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		svcs, err := cp.Clientset.CoreV1().Services(releaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: targetLabel})
		if err != nil {
			t.Fatal(err)
		}
		if len(svcs.Items) != 0 {
			t.Fatalf("target Services left after uninstall: %d", len(svcs.Items))
		}
		// Passed through again: the public answer (after at most the
		// hairpin answers' TTL in the cache).
		c.waitA(t, "app.example.com", publicIP, 15*time.Second)
		c.waitA(t, "shop.foo.example.org", publicIP, 15*time.Second)
		c.expect(t, dnsExpectation{name: "kubernetes.default.svc.cluster.local", a: clusterIP(t, cp, "default", "kubernetes")})
	})

	if out := c.proc.Output(); strings.Contains(out, "[ERROR]") || strings.Contains(out, "[FATAL]") {
		t.Errorf("coredns logged errors:\n%s", out)
	}
}

// TestTenantModeCorefileServes installs the chart in tenant mode, reads the
// Corefile back from the ConfigMap it created, and runs it in our CoreDNS as
// the service account the chart created, with only the RBAC the chart
// rendered (no kubeadm role): the kubernetes plugin resolves the kubernetes
// Service and hairpin answers the Ingress host with the target's ClusterIP.
// A CoreDNS with only the kubernetes plugin's role gets the public answer.
func TestTenantModeCorefileServes(t *testing.T) {
	cp := newControlPlane(t)
	h := harness.RequireHelm(t).WithKubeconfig(cp.Kubeconfig)
	createIngress(t, cp, "app", "nginx", "app.apps.example.org")
	h.MustRun(t, "install", releaseName, chartDir(t), "--namespace", releaseNamespace, "--create-namespace",
		"--values", filepath.Join(chartDir(t), "examples", "tenant-mode.yaml"), "--set-json", `targets.ingress-nginx.zones=["apps.example.org"]`)
	serveTargets(t, cp)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cm, err := cp.Clientset.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	corefile := cm.Data["Corefile"]
	kc, _, err := cp.UserKubeconfig(coreDNSUser, "system:serviceaccounts", "system:serviceaccounts:kube-system")
	if err != nil {
		t.Fatal(err)
	}
	public := startPublicDNS(t)
	c, err := serveCorefile(t, corefile, nil, kc, public, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.proc.Stop()
	c.expect(t, dnsExpectation{name: "kubernetes.default.svc.cluster.local", a: clusterIP(t, cp, "default", "kubernetes")})
	c.waitA(t, "app.apps.example.org", clusterIP(t, cp, releaseNamespace, "ingress-nginx"), 10*time.Second)

	t.Run("without the chart's hairpin RBAC the host is not answered", func(t *testing.T) {
		// A CoreDNS that has the kubernetes plugin's role and nothing else:
		// it becomes ready, but hairpin cannot read the targets or the
		// Ingresses, so the host gets the public answer.
		const user = "kubernetes-plugin-only"
		k := cli{t: t, kubectl: kubectl(t), kubeconfig: cp.Kubeconfig}
		k.run(nil, "create", "clusterrolebinding", user, "--clusterrole=hairpin-coredns-kubernetes", "--user="+user)
		kc, _, err := cp.UserKubeconfig(user)
		if err != nil {
			t.Fatal(err)
		}
		c, err := serveCorefile(t, corefile, nil, kc, public, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.proc.Stop()
		c.expect(t, dnsExpectation{name: "kubernetes.default.svc.cluster.local", a: clusterIP(t, cp, "default", "kubernetes")})
		c.expect(t, dnsExpectation{name: "app.apps.example.org", a: publicIP})
	})
}
