package manifests

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// serviceCIDR is the apiserver's Service range in this test: a realistic
// one, so that kube-dns's clusterIP placeholder (10.96.0.10) is valid.
const serviceCIDR = "10.96.0.0/12"

// coreDNSUser is the identity our CoreDNS runs as against the test
// apiserver: RBAC matches ServiceAccount subjects by user name, so a client
// certificate with this name gets exactly what kube-system/coredns is bound to.
const coreDNSUser = "system:serviceaccount:kube-system:coredns"

// kubeadmCoreDNS is what kubeadm leaves behind before our manifests are
// applied: CoreDNS's own account, role, Deployment and Corefile. The
// cluster overlays patch and extend it.
const kubeadmCoreDNS = `
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
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
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:53 {
        errors
        kubernetes cluster.local in-addr.arpa ip6.arpa
        forward . /etc/resolv.conf
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 2
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      containers:
      - name: coredns
        image: registry.k8s.io/coredns/coredns:v1.12.0
        args: [-conf, /etc/coredns/Corefile]
        securityContext:
          allowPrivilegeEscalation: false
          capabilities: {add: [NET_BIND_SERVICE], drop: [ALL]}
          readOnlyRootFilesystem: true
---
apiVersion: v1
kind: Namespace
metadata: {name: ingress-nginx}
`

// hostObjects are what the served Corefiles are asked about: an Ingress
// host, and a Gateway listener hostname of the class the gateway overlay
// names.
const hostObjects = `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: app, namespace: default}
spec:
  rules:
  - host: app.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: nginx
  listeners:
  - {name: http, port: 80, protocol: HTTP, hostname: gw.example.com}
`

// cli runs kubectl against a control plane.
type cli struct {
	t          *testing.T
	kubectl    string
	kubeconfig string
}

// run runs kubectl with args and stdin, failing the test on error, and
// returns stdout and stderr.
func (k cli) run(stdin []byte, args ...string) (string, string) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.kubectl, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// namespaces returns the Namespace objects of objs as YAML.
func namespaces(t *testing.T, objs []apiruntime.Object) []byte {
	t.Helper()
	var out []byte
	for _, ns := range all[*corev1.Namespace](objs) {
		ns.APIVersion, ns.Kind = "v1", "Namespace"
		b, err := yaml.Marshal(ns)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, "---\n"...), b...)
	}
	return out
}

// TestManifestsOnAPIServer runs against one real kube-apiserver (with the
// Gateway API CRDs) that starts out like a kubeadm cluster. For each
// rendered kustomization, in order:
//
//  1. its Namespaces are created, and the apiserver accepts every object
//     with `kubectl apply --dry-run=server` (no Pod Security warnings);
//  2. it is applied for real, and every Corefile it carries runs in our
//     CoreDNS as kube-system/coredns with exactly the RBAC granted by then,
//     becomes ready (kubernetes and hairpin synced), resolves the
//     kubernetes Service, and answers the Ingress host with the proxy's
//     ClusterIP (the Gateway hostname only with the gateway overlay).
//
// The tenant renders run last, after kubeadm's own CoreDNS binding is
// deleted, so that their ClusterRole alone has to suffice.
func TestManifestsOnAPIServer(t *testing.T) {
	renders := renderAll(t)
	cp := harness.NewControlPlane(t, harness.ControlPlaneOptions{
		GatewayAPI:     harness.GatewayStandard,
		APIServerFlags: map[string][]string{"service-cluster-ip-range": {serviceCIDR}},
	})
	k := cli{t: t, kubectl: kubectl(t), kubeconfig: cp.Kubeconfig}
	// Created, not applied, as kubeadm does: no last-applied annotation.
	k.run([]byte(kubeadmCoreDNS), "create", "-f", "-")
	k.run([]byte(hostObjects), "create", "-f", "-")
	kcCoreDNS, _, err := cp.UserKubeconfig(coreDNSUser, "system:serviceaccounts", "system:serviceaccounts:kube-system")
	if err != nil {
		t.Fatal(err)
	}
	kcNobody, _, err := cp.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}

	order := func(r rendered) int {
		if strings.Contains(r.dir, "tenant") {
			return 1
		}
		return 0
	}
	kubeadmBindingDeleted := false
	for _, phase := range []int{0, 1} {
		for _, r := range renders {
			if order(r) != phase {
				continue
			}
			if phase == 1 && !kubeadmBindingDeleted {
				k.run(nil, "delete", "clusterrolebinding", "system:coredns")
				kubeadmBindingDeleted = true
			}
			t.Run(r.dir, func(t *testing.T) {
				k := cli{t: t, kubectl: k.kubectl, kubeconfig: k.kubeconfig}
				if len(r.objs) == 0 {
					t.Log("renders no objects (a component); nothing to apply")
					return
				}
				if ns := namespaces(t, r.objs); len(ns) > 0 {
					k.run(ns, "apply", "-f", "-")
				}
				// Server-side apply, as docs/install.md says: it merges the
				// image patch into kube-system/coredns without touching
				// fields that other managers own.
				_, stderr := k.run(r.yaml, append(serverSideApply, "--dry-run=server")...)
				if strings.Contains(stderr, "PodSecurity") {
					t.Errorf("Pod Security warnings:\n%s", stderr)
				}
				k.run(r.yaml, serverSideApply...)
				checkCoreDNSDeploymentIntact(t, cp, r)
				serveRenderedCorefiles(t, cp, r, kcCoreDNS)
			})
		}
	}

	// The checks above must be able to fail: a malformed Corefile, and a
	// CoreDNS without RBAC, are caught.
	t.Run("checker catches broken setups", func(t *testing.T) {
		good := findCorefile(t, renders, "overlays/cluster")
		tests := []struct {
			name       string
			corefile   string
			kubeconfig string
		}{
			{"unknown hairpin option", strings.Replace(good, "proxy hairpin-system/hairpin-proxy", "proxyy hairpin-system/hairpin-proxy", 1), kcCoreDNS},
			{"unbalanced brace", strings.Replace(good, "loadbalance\n}", "loadbalance\n", 1), kcCoreDNS},
			{"no RBAC", good, kcNobody},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				c, err := serveCorefile(t, tt.corefile, nil, tt.kubeconfig, 8*time.Second)
				if err == nil {
					c.proc.Stop()
					t.Fatal("a broken setup served and became ready")
				}
				t.Logf("caught as expected: %.300s", err)
			})
		}
	})
}

// serverSideApply is the kubectl command line that applies manifests.
var serverSideApply = []string{"apply", "--server-side", "--force-conflicts", "--field-manager=coredns-hairpin", "-f", "-"}

// checkCoreDNSDeploymentIntact checks that, after r was applied, the
// kube-system/coredns Deployment runs our image and kept everything else
// (its selector and the container's args and capabilities).
func checkCoreDNSDeploymentIntact(t *testing.T, cp *harness.ControlPlane, r rendered) {
	t.Helper()
	want := find[*appsv1.Deployment](r.objs, "coredns")
	if want == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := cp.Clientset.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := got.Spec.Template.Spec.Containers
	if got.Spec.Selector == nil || len(c) != 1 || len(c[0].Args) == 0 || c[0].SecurityContext == nil ||
		c[0].Image != want.Spec.Template.Spec.Containers[0].Image {
		t.Errorf("kube-system/coredns after apply: selector %v, containers %+v; want our image %s and the rest kept",
			got.Spec.Selector, c, want.Spec.Template.Spec.Containers[0].Image)
	}
}

// findCorefile returns the Corefile rendered by dir.
func findCorefile(t *testing.T, renders []rendered, dir string) string {
	t.Helper()
	for _, r := range renders {
		if r.dir == dir {
			if cm := find[*corev1.ConfigMap](r.objs, "coredns"); cm != nil {
				return cm.Data["Corefile"]
			}
		}
	}
	t.Fatalf("%s renders no coredns ConfigMap", dir)
	return ""
}

// serveRenderedCorefiles runs every Corefile of r in our CoreDNS and checks
// its answers.
func serveRenderedCorefiles(t *testing.T, cp *harness.ControlPlane, r rendered, kubeconfig string) {
	t.Helper()
	for _, cm := range all[*corev1.ConfigMap](r.objs) {
		corefile, ok := cm.Data["Corefile"]
		if !ok {
			continue
		}
		var env []corev1.EnvVar
		if d := find[*appsv1.Deployment](r.objs, "coredns"); d != nil && len(d.Spec.Template.Spec.Containers) > 0 {
			env = d.Spec.Template.Spec.Containers[0].Env
		}
		var environ []string
		for _, e := range env {
			environ = append(environ, e.Name+"="+e.Value)
		}
		c, err := serveCorefile(t, corefile, environ, kubeconfig, 30*time.Second)
		if err != nil {
			t.Fatalf("ConfigMap %s/%s: %v", cm.Namespace, cm.Name, err)
		}
		checkAnswers(t, cp, r, c, corefileDomain(corefile, env), strings.Contains(corefile, "gateway_class nginx"))
		c.proc.Stop()
	}
}

// checkAnswers queries a served Corefile: the kubernetes Service through
// the kubernetes plugin, and the Ingress and Gateway hosts through hairpin.
func checkAnswers(t *testing.T, cp *harness.ControlPlane, r rendered, c *coreDNS, domain string, gateway bool) {
	t.Helper()
	{
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		kube, err := cp.Clientset.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		c.expect(t, dnsExpectation{name: "kubernetes.default.svc." + domain, a: kube.Spec.ClusterIP})

		// Hairpin answers need the proxy Service, so only renders that
		// include the proxy are asked.
		if find[*corev1.Service](r.objs, "hairpin-proxy") == nil {
			return
		}
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		proxy, err := cp.Clientset.CoreV1().Services("hairpin-system").Get(ctx, "hairpin-proxy", metav1.GetOptions{})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		c.expect(t, dnsExpectation{name: "app.example.com", a: proxy.Spec.ClusterIP})
		gw := dnsExpectation{name: "gw.example.com"}
		if gateway {
			gw.a = proxy.Spec.ClusterIP
		}
		c.expect(t, gw)
	}
}
