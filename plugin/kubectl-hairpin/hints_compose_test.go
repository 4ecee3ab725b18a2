package kubectlhairpin

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	core "k8s.io/api/core/v1"
	networking "k8s.io/api/networking/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// addTenantIngressNginx adds a tenant's ingress-nginx that requires PROXY,
// with its own class (named as the namespace) and an Ingress
// portal.NAMESPACE.example.net, behind load balancer IP lbIP.
func addTenantIngressNginx(c *cluster, namespace, lbIP string) {
	addIngressNginx(c, namespace, "ingress-nginx-controller", namespace, "portal."+namespace+".example.net", lbIP)
}

// addIngressNginx adds an ingress-nginx that requires PROXY: its
// controller Service (and Deployment and ConfigMap) namespace/name behind
// load balancer IP lbIP, its own IngressClass class, and an Ingress for
// host.
func addIngressNginx(c *cluster, namespace, name, class, host, lbIP string) {
	labels := map[string]string{"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/instance": namespace}
	lb := service(namespace, name, labels, "", namedPort("http", 80, "http"), namedPort("https", 443, "https"))
	lb.Spec.Type = core.ServiceTypeLoadBalancer
	lb.Status.LoadBalancer.Ingress = []core.LoadBalancerIngress{{IP: lbIP}}
	c.add(ingress(namespace, "portal", class, host),
		&networking.IngressClass{ObjectMeta: objectMeta("", class, nil), Spec: networking.IngressClassSpec{Controller: "k8s.io/ingress-nginx-" + class}},
		lb,
		&core.ConfigMap{ObjectMeta: objectMeta(namespace, name, labels), Data: map[string]string{"use-proxy-protocol": "true"}},
		deployment(namespace, name, labels, "/nginx-ingress-controller",
			"--controller-class=k8s.io/ingress-nginx-"+class, "--configmap=$(POD_NAMESPACE)/"+name),
	)
}

// setJSON finds the --set-json values of a hint.
var setJSON = regexp.MustCompile(`--set-json '([^']+)'`)

// TestHintsOfOneReportCompose renders the chart (real helm) with the values
// of the cluster's own target and every --set-json of one report's hints at
// once: two tenants' classes and a Gateway without a target, each hinted
// twice (its class or Gateway line, and its hosts' line). Pasted together
// they must render, so no two may take one container port or name.
func TestHintsOfOneReportCompose(t *testing.T) {
	helm := harness.RequireHelm(t)
	e := newEnv(t)
	c := healthyCluster()
	addTenantIngressNginx(c, "tenant-a", "203.0.113.40")
	addTenantIngressNginx(c, "tenant-b", "203.0.113.41")
	c.remove("hairpin-system", "tenant-gw")
	c.remove("hairpin-system", "tenant-gw-x7k2p")
	e.apply(t, c)
	r := e.run(t, e.cp.Config)

	// The cluster's one target, as the chart's defaults and this zone
	// render it (containerPorts 8080 and 8443).
	args := []string{"template", "hairpin", filepath.Join("..", "..", "manifests", "coredns-hairpin"), "-n", "hairpin-system",
		"--set-json", `targets.ingress-nginx.zones=["example.com"]`}
	var values []string
	for _, ch := range r.Checks {
		for _, m := range setJSON.FindAllStringSubmatch(ch.Hint, -1) {
			if !slices.Contains(values, m[1]) {
				values = append(values, m[1])
			}
		}
	}
	if len(values) < 3 {
		t.Fatalf("want a hint for each of tenant-a, tenant-b and Gateway tenant/gw; got %q\nreport:\n%s", values, table(t, r))
	}
	for _, v := range values {
		args = append(args, "--set-json", v)
	}
	if _, err := helm.Run(context.Background(), args...); err != nil {
		t.Fatalf("the hints of one report do not compose: %v\nreport:\n%s", err, table(t, r))
	}
}
