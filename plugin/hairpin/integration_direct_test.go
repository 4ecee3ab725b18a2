package hairpin

import (
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	rbac "k8s.io/api/rbac/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
)

// directTargets runs the plugin as a user that may read Ingresses
// cluster-wide, Services in the targets namespace, and Services in the
// controller's namespace through a Role there only, as the chart grants
// them: a direct target answers with its named (selectorless) Service's
// ClusterIP, inside its zones; a recreated Service's new ClusterIP is
// followed; a missing Service, or one in a namespace the plugin may not
// read, degrades that target and nothing else.
func (it *integration) directTargets(t *testing.T, ns string) {
	gwNS, lockedNS := ns+"-gw", ns+"-locked"
	it.createNamespace(t, gwNS)
	it.createNamespace(t, lockedNS)
	user := "hairpin-direct-" + ns
	kubeconfig, _, err := it.cp.UserKubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	it.grantRead(t, user, "networking.k8s.io", "ingresses", "ingressclasses")
	// As the chart grants: the targets and their EndpointSlices, and the
	// Services that direct targets name.
	it.grantNamespaced(t, user, ns, readRule("", "services"), readRule(discovery.GroupName, "endpointslices"))
	it.grantNamespaced(t, user, gwNS, readRule("", "services"))

	public := it.createControllerService(t, gwNS, "public", "")
	proxied := it.createTarget(t, ns, "proxied", map[string]string{rules.ZonesAnnotation: "example.com", rules.IngressClassesAnnotation: "nginx"})
	it.createTarget(t, ns, "direct", map[string]string{
		rules.ZonesAnnotation: "example.org", rules.IngressClassesAnnotation: "cilium",
		rules.DirectServiceAnnotation: gwNS + "/public",
	})
	it.createTarget(t, ns, "locked", map[string]string{
		rules.ZonesAnnotation: "locked.example", rules.IngressClassesAnnotation: "locked",
		rules.DirectServiceAnnotation: lockedNS + "/public",
	})
	it.createControllerService(t, lockedNS, "public", "")
	it.createIngress(t, ingress(ns, "web", "nginx", "web.example.com"))
	it.createIngress(t, ingress(ns, "app", "cilium", "app.example.org"))
	it.createIngress(t, ingress(ns, "hijack", "cilium", "login.example.com"))
	it.createIngress(t, ingress(ns, "locked", "locked", "app.locked.example"))

	s := settings{zones: []string{"."}, targetsNamespace: ns, kubeconfig: kubeconfig, startupTimeout: 20 * time.Second}
	hc := it.syncedCache(t, s)
	wantA(t, hc, "app.example.org.", public)
	wantA(t, hc, "web.example.com.", proxied)
	// The zones guard: a cilium-class host outside example.org.
	wantA(t, hc, "login.example.com.", "")
	// No Role in lockedNS: that target only is degraded, and counted.
	wantA(t, hc, "app.locked.example.", "")
	eventually(t, "forbidden Service lists in "+lockedNS+" counted", func() bool {
		return testutil.ToFloat64(watchErrors.WithLabelValues(hc.id, directKind(lockedNS), "forbidden")) > 0
	})
	if !newTestHairpin(hc, []string{"."}).Ready() {
		t.Error("a direct target's unreadable namespace must not hold readiness")
	}

	// Recreated with a new ClusterIP: the gap passes through, then the new
	// address is answered.
	svcs := it.kube.CoreV1().Services(gwNS)
	if err := svcs.Delete(it.ctx(t), "public", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantA(t, hc, "app.example.org.", "")
	wantA(t, hc, "web.example.com.", proxied)
	again := it.createControllerService(t, gwNS, "public", nextAddr(public))
	wantA(t, hc, "app.example.org.", again)
	if got := testutil.ToFloat64(targetAddresses.WithLabelValues(hc.id, ns+"/direct", "ipv4")); got != 1 {
		t.Errorf("target_addresses{direct} = %v; want 1", got)
	}
}

// createControllerService creates a selectorless Service, as the Cilium
// Gateway's is, with clusterIP ("" for one the apiserver picks), and
// returns its ClusterIP.
func (it *integration) createControllerService(t *testing.T, ns, name, clusterIP string) string {
	t.Helper()
	svc := &core.Service{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name},
		Spec:       core.ServiceSpec{ClusterIP: clusterIP, Ports: []core.ServicePort{{Name: "http", Port: 80}}},
	}
	created, err := it.kube.CoreV1().Services(ns).Create(it.ctx(t), svc, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created.Spec.ClusterIP
}

// nextAddr is the address after ip: a ClusterIP the recreated Service
// asks for, so that the change is one.
func nextAddr(ip string) string {
	return netip.MustParseAddr(ip).Next().String()
}

// grantNamespaced binds user to get/list/watch on core resources in ns, as
// the chart's Roles do.
func (it *integration) grantNamespaced(t *testing.T, user, ns string, rules ...rbac.PolicyRule) {
	t.Helper()
	name := user + "-read"
	role := &rbac.Role{
		ObjectMeta: meta.ObjectMeta{Name: name, Namespace: ns},
		Rules:      rules,
	}
	if _, err := it.kube.RbacV1().Roles(ns).Create(it.ctx(t), role, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbac.RoleBinding{
		ObjectMeta: meta.ObjectMeta{Name: name, Namespace: ns},
		RoleRef:    rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbac.Subject{{Kind: rbac.UserKind, APIGroup: rbac.GroupName, Name: user}},
	}
	if _, err := it.kube.RbacV1().RoleBindings(ns).Create(it.ctx(t), binding, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
