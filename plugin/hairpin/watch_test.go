package hairpin

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	core "k8s.io/api/core/v1"
	networking "k8s.io/api/networking/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

func ingress(ns, name, class string, hosts ...string) *networking.Ingress {
	ing := &networking.Ingress{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name}}
	if class != "" {
		ing.Spec.IngressClassName = &class
	}
	for _, h := range hosts {
		ing.Spec.Rules = append(ing.Spec.Rules, networking.IngressRule{Host: h})
	}
	return ing
}

func ingressClassObj(name string, isDefault bool, created time.Time) *networking.IngressClass {
	ic := &networking.IngressClass{ObjectMeta: meta.ObjectMeta{Name: name, CreationTimestamp: meta.NewTime(created)}}
	if isDefault {
		ic.Annotations = map[string]string{rules.DefaultIngressClassAnnotation: "true"}
	}
	return ic
}

func proxyService(clusterIPs ...string) *core.Service {
	return &core.Service{
		ObjectMeta: meta.ObjectMeta{Namespace: defaultProxyNamespace, Name: defaultProxyName},
		Spec:       core.ServiceSpec{ClusterIP: clusterIPs[0], ClusterIPs: clusterIPs},
	}
}

// targetService is a discovered target in hairpin-system with one
// ClusterIP, zones and Ingress classes (comma-separated annotation values).
func targetService(name, clusterIP, zones, ingressClasses string) *core.Service {
	return &core.Service{
		ObjectMeta: meta.ObjectMeta{
			Namespace: defaultTargetsNamespace, Name: name,
			Labels:      map[string]string{rules.TargetLabel: ""},
			Annotations: map[string]string{rules.ZonesAnnotation: zones, rules.IngressClassesAnnotation: ingressClasses},
		},
		Spec: core.ServiceSpec{ClusterIP: clusterIP, ClusterIPs: []string{clusterIP}},
	}
}

// fakeCache starts a cache over a fake clientset holding objs.
func fakeCache(t *testing.T, s settings, objs ...runtime.Object) (*hostCache, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	if s.zones == nil {
		s.zones = []string{"example.com."}
	}
	if s.labels == nil {
		s.labels = labels.Everything()
	}
	if s.startupTimeout == 0 {
		s.startupTimeout = 5 * time.Second
	}
	if s.proxyName == "" && len(s.proxyIPs) == 0 {
		s.proxyNamespace, s.proxyName = defaultProxyNamespace, defaultProxyName
	}
	hc := newHostCache(&clients{kube: client}, s)
	if err := hc.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.stop)
	if !hc.waitOpen(5 * time.Second) {
		t.Fatal("cache did not sync")
	}
	return hc, client
}

// served returns the sorted exact and wildcard hosts of the current index.
func served(hc *hostCache) []string {
	ix := hc.index()
	var out []string
	ix.each(func(h string, _ *target) { out = append(out, h) })
	slices.Sort(out)
	return out
}

// eventually polls cond until it holds or 5 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	harness.Eventually(t, 5*time.Second, what, cond)
}

func wantServed(t *testing.T, hc *hostCache, want ...string) {
	t.Helper()
	slices.Sort(want)
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := served(hc)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("served hosts = %v, want %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestIngressAddUpdateDeleteReflected(t *testing.T) {
	hc, client := fakeCache(t, settings{}, proxyService("127.77.0.10"), ingress("default", "app", "", "app.example.com"))
	wantServed(t, hc, "app.example.com.")
	ctx := context.Background()
	ings := client.NetworkingV1().Ingresses("default")

	if _, err := ings.Create(ctx, ingress("default", "two", "", "b.example.com", "*.w.example.com"), meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantServed(t, hc, "app.example.com.", "b.example.com.", "*.w.example.com.")

	if _, err := ings.Update(ctx, ingress("default", "two", "", "c.example.com"), meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantServed(t, hc, "app.example.com.", "c.example.com.")

	if err := ings.Delete(ctx, "app", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantServed(t, hc, "c.example.com.")
}

func TestHostClaimedTwiceStaysUntilLastOwnerGoes(t *testing.T) {
	hc, client := fakeCache(t, settings{}, proxyService("127.77.0.10"),
		ingress("a", "one", "", "shared.example.com"), ingress("b", "two", "", "shared.example.com"))
	wantServed(t, hc, "shared.example.com.")
	ctx := context.Background()
	if err := client.NetworkingV1().Ingresses("a").Delete(ctx, "one", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Give the delete time to land, then check the host is still there.
	eventually(t, "the delete to be seen", func() bool { return ownerCount(hc) == 1 })
	wantServed(t, hc, "shared.example.com.")
	if err := client.NetworkingV1().Ingresses("b").Delete(ctx, "two", meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantServed(t, hc)
}

func ownerCount(hc *hostCache) int {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return hc.claims.owners
}

func TestIngressClassFilterAndDefaultClassFlip(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	nginx := "nginx"
	legacy := ingress("default", "legacy", "")
	legacy.Annotations = map[string]string{rules.LegacyIngressClassAnnotation: "nginx"}
	legacy.Spec.Rules = []networking.IngressRule{{Host: "legacy.example.com"}}
	hc, client := fakeCache(t, settings{ingressClasses: []string{nginx}},
		proxyService("127.77.0.10"),
		ingressClassObj("nginx", false, t0), ingressClassObj("traefik", true, t0),
		ingress("default", "mine", "nginx", "mine.example.com"),
		ingress("default", "theirs", "traefik", "theirs.example.com"),
		ingress("default", "unnamed", "", "unnamed.example.com"),
		legacy)
	wantServed(t, hc, "mine.example.com.", "legacy.example.com.")
	ctx := context.Background()

	// Flip the default to nginx: the Ingress that names no class follows.
	classes := client.NetworkingV1().IngressClasses()
	if _, err := classes.Update(ctx, ingressClassObj("traefik", false, t0), meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := classes.Update(ctx, ingressClassObj("nginx", true, t0), meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantServed(t, hc, "mine.example.com.", "legacy.example.com.", "unnamed.example.com.")

	// A class change on the Ingress itself.
	if _, err := client.NetworkingV1().Ingresses("default").Update(ctx, ingress("default", "mine", "traefik", "mine.example.com"), meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantServed(t, hc, "legacy.example.com.", "unnamed.example.com.")
}

func TestNamespaceAndLabelFilters(t *testing.T) {
	labelled := func(ns, name, host string, lbl map[string]string) *networking.Ingress {
		ing := ingress(ns, name, "", host)
		ing.Labels = lbl
		return ing
	}
	sel, err := labels.Parse("hairpin=on")
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]string{"hairpin": "on"}
	hc, client := fakeCache(t, settings{namespaces: []string{"team-a", "team-b"}, labels: sel},
		proxyService("127.77.0.10"),
		labelled("team-a", "a", "a.example.com", on),
		labelled("team-b", "b", "b.example.com", on),
		labelled("team-c", "c", "c.example.com", on),
		labelled("team-a", "off", "off.example.com", map[string]string{"hairpin": "off"}))
	wantServed(t, hc, "a.example.com.", "b.example.com.")

	if _, err := client.NetworkingV1().Ingresses("team-a").Update(context.Background(),
		labelled("team-a", "off", "off.example.com", on), meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantServed(t, hc, "a.example.com.", "b.example.com.", "off.example.com.")
}

func TestHostsOutsideZonesAndInvalidHostsAreRejected(t *testing.T) {
	hc, _ := fakeCache(t, settings{}, proxyService("127.77.0.10"),
		ingress("default", "mixed", "", "ok.example.com", "victim.bank.com", "Bad_Host.example.com"))
	wantServed(t, hc, "ok.example.com.")
	hc.mu.Lock()
	got := hc.claims.rejectedByReason()
	hc.mu.Unlock()
	if got[rules.ReasonOutsideZones] != 1 || got[rules.ReasonInvalid] != 1 {
		t.Errorf("rejected = %v, want one outside_zones and one invalid", got)
	}
}

func TestProxyServiceChangesAreFollowed(t *testing.T) {
	hc, client := fakeCache(t, settings{}, proxyService("127.77.0.10"), ingress("default", "app", "", "app.example.com"))
	wantAddrs := func(want string) {
		t.Helper()
		eventually(t, "proxy addresses "+want, func() bool {
			a := hc.targets[defaultProxyNamespace+"/"+defaultProxyName].load()
			got := ""
			for _, ip := range append(append([]net.IP{}, a.v4...), a.v6...) {
				got += ip.String() + " "
			}
			return got == want
		})
	}
	wantAddrs("127.77.0.10 ")
	ctx := context.Background()
	svcs := client.CoreV1().Services(defaultProxyNamespace)

	// Another Service in the namespace is not the proxy.
	other := proxyService("127.77.0.99")
	other.Name = "something-else"
	if _, err := svcs.Create(ctx, other, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Update(ctx, proxyService("127.77.0.11", "fd00::11"), meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantAddrs("127.77.0.11 fd00::11 ")

	// Headless: no single address reaches the proxy.
	if _, err := svcs.Update(ctx, proxyService(core.ClusterIPNone), meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantAddrs("")
	if _, err := svcs.Update(ctx, proxyService("127.77.0.12"), meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantAddrs("127.77.0.12 ")

	// Deleted and recreated with a new ClusterIP.
	if err := svcs.Delete(ctx, defaultProxyName, meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantAddrs("")
	if _, err := svcs.Create(ctx, proxyService("127.77.0.13"), meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantAddrs("127.77.0.13 ")
}
