package manifests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// copyTree copies the folder src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// setParam rewrites KEY=... in the env file at path.
func setParam(t *testing.T, path, key, value string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `=.*$`)
	if !re.Match(b) {
		t.Fatalf("%s has no %s=", path, key)
	}
	if err := os.WriteFile(path, re.ReplaceAll(b, []byte(key+"="+value)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestParamsAreSetInOnePlace changes only the params.env files of a copy of
// manifests/ and checks that every value lands everywhere it is used: the
// ingress namespace and Service in the proxy's routes and NetworkPolicy, the
// tenant's cluster domain in its CoreDNS and in the proxy's upstream, the
// DNS Service IP in kube-dns.
func TestParamsAreSetInOnePlace(t *testing.T) {
	root := filepath.Join(t.TempDir(), "manifests")
	copyTree(t, manifestsDir(t), root)
	setParam(t, filepath.Join(root, "proxy", "params.env"), "INGRESS_NAMESPACE", "edge")
	setParam(t, filepath.Join(root, "proxy", "params.env"), "INGRESS_SERVICE", "edge-nginx")
	setParam(t, filepath.Join(root, "proxy", "params.env"), "CLUSTER_DOMAIN", "corp.internal")
	setParam(t, filepath.Join(root, "tenant", "params.env"), "CLUSTER_DOMAIN", "tenant.example")
	setParam(t, filepath.Join(root, "tenant", "params.env"), "DNS_SERVICE_IP", "10.100.0.10")

	tests := []struct {
		dir        string
		wantDomain string
		tenant     bool
	}{
		{dir: "proxy", wantDomain: "corp.internal"},
		{dir: "overlays/cluster", wantDomain: "corp.internal"},
		{dir: "overlays/cluster-gateway", wantDomain: "corp.internal"},
		{dir: "overlays/tenant", wantDomain: "tenant.example", tenant: true},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			objs, err := decode(render(t, filepath.Join(root, tt.dir)))
			if err != nil {
				t.Fatal(err)
			}
			if tt.dir == "overlays/cluster" || tt.dir == "overlays/cluster-gateway" {
				// Their Corefile is a fixed cluster.local example; the
				// domain check belongs to the tenant.
				objs = withoutCorefiles(objs)
			}
			routes := checkProxyWiring(t, objs)
			if r := routes[0]; r.namespace != "edge" || r.service != "edge-nginx" || r.domain != tt.wantDomain {
				t.Errorf("upstream %s.%s.svc.%s; want edge-nginx.edge.svc.%s", r.service, r.namespace, r.domain, tt.wantDomain)
			}
			if !tt.tenant {
				return
			}
			cd := find[*appsv1.Deployment](objs, "coredns")
			if dom := cd.Spec.Template.Spec.Containers[0].Env; len(dom) != 1 || dom[0].Value != "tenant.example" {
				t.Errorf("tenant CoreDNS env %v; want CLUSTER_DOMAIN=tenant.example", dom)
			}
			if svc := find[*corev1.Service](objs, "kube-dns"); svc == nil || svc.Spec.ClusterIP != "10.100.0.10" {
				t.Errorf("kube-dns Service %v; want clusterIP 10.100.0.10", svc)
			}
		})
	}
}

// withoutCorefiles drops the ConfigMaps that carry a Corefile.
func withoutCorefiles[T any](objs []T) []T {
	var out []T
	for _, o := range objs {
		if cm, ok := any(o).(*corev1.ConfigMap); ok && strings.Contains(cm.Data["Corefile"], "kubernetes") {
			continue
		}
		out = append(out, o)
	}
	return out
}
