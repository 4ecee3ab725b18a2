package hairpin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestTargetAnnotationsParse(t *testing.T) {
	cases := []struct {
		name    string
		ann     map[string]string
		want    targetSelection
		wantErr string
	}{
		{"zones and classes, whitespace ignored", map[string]string{
			zonesAnnotation: " Example.com , example.org. ", ingressClassesAnnotation: "nginx, tenant-a",
		}, targetSelection{zones: []string{"example.com.", "example.org."}, ingressClasses: []string{"nginx", "tenant-a"}}, ""},
		{"every class", map[string]string{zonesAnnotation: "example.com", ingressClassesAnnotation: "*", gatewayClassesAnnotation: "*"},
			targetSelection{zones: []string{"example.com."}, ingressClasses: []string{"*"}, gatewayClasses: []string{"*"}}, ""},
		{"gateways by name", map[string]string{zonesAnnotation: "example.com", gatewaysAnnotation: "infra/public,tenant-a/web"},
			targetSelection{zones: []string{"example.com."}, gateways: []string{"infra/public", "tenant-a/web"}}, ""},
		{"no zones disables", map[string]string{ingressClassesAnnotation: "nginx"}, targetSelection{}, "missing or empty"},
		{"empty zones disables", map[string]string{zonesAnnotation: " "}, targetSelection{}, "missing or empty"},
		{"bad zone", map[string]string{zonesAnnotation: "exa mple.com"}, targetSelection{}, `zone "exa mple.com"`},
		{"wildcard zone", map[string]string{zonesAnnotation: "*.example.com"}, targetSelection{}, `zone "*.example.com"`},
		{"empty item", map[string]string{zonesAnnotation: "example.com,,example.org"}, targetSelection{}, "empty item 2"},
		{"bad class", map[string]string{zonesAnnotation: "example.com", ingressClassesAnnotation: "Bad_Class"}, targetSelection{}, `"Bad_Class"`},
		{"gateway without namespace", map[string]string{zonesAnnotation: "example.com", gatewaysAnnotation: "public"}, targetSelection{}, "want namespace/name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := parseTargetAnnotations(tc.ann)
			if tc.wantErr != "" {
				if got.err == nil || !strings.Contains(got.err.Error(), tc.wantErr) || got.enabled() {
					t.Fatalf("err = %v, want a disabled target and an error containing %q", got.err, tc.wantErr)
				}
				return
			}
			if got.err != nil || !got.equal(tc.want) || !got.enabled() {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTargetSelectionRules(t *testing.T) {
	mk := func(name string, sel targetSelection) *target {
		if sel.zones == nil {
			sel.zones = []string{"example.com."}
		}
		return newTarget(name, sel)
	}
	all := mk("ns/all", targetSelection{ingressClasses: []string{"*"}, gatewayClasses: []string{"*"}})
	nginx := mk("ns/nginx", targetSelection{ingressClasses: []string{"nginx"}})
	nginx2 := mk("ns/nginx-b", targetSelection{ingressClasses: []string{"nginx"}})
	cilium := mk("ns/cilium", targetSelection{gatewayClasses: []string{"cilium"}})
	named := mk("ns/tenant-gw", targetSelection{gateways: []string{"tenant/web"}})
	disabled := mk("ns/a-disabled", targetSelection{ingressClasses: []string{"nginx"}, err: errors.New("bad")})

	cases := []struct {
		name         string
		ts           targets
		pick         func(targets) selection
		want         *target
		wantConflict bool
	}{
		{"class beats wildcard", targets{all.name: all, nginx.name: nginx}, func(ts targets) selection { return ts.forIngress("nginx") }, nginx, true},
		{"wildcard takes other classes", targets{all.name: all, nginx.name: nginx}, func(ts targets) selection { return ts.forIngress("traefik") }, all, false},
		{"no target selects", targets{nginx.name: nginx}, func(ts targets) selection { return ts.forIngress("traefik") }, nil, false},
		{"no class matches only wildcard", targets{nginx.name: nginx}, func(ts targets) selection { return ts.forIngress("") }, nil, false},
		{"tie goes to the first name", targets{nginx2.name: nginx2, nginx.name: nginx}, func(ts targets) selection { return ts.forIngress("nginx") }, nginx, true},
		{"disabled target never selects", targets{disabled.name: disabled}, func(ts targets) selection { return ts.forIngress("nginx") }, nil, false},
		{"gateway by name beats class", targets{cilium.name: cilium, named.name: named}, func(ts targets) selection { return ts.forGateway("tenant", "web", "cilium") }, named, true},
		{"gateway by class", targets{cilium.name: cilium, named.name: named}, func(ts targets) selection { return ts.forGateway("infra", "public", "cilium") }, cilium, false},
		{"gateway class is not an ingress class", targets{cilium.name: cilium}, func(ts targets) selection { return ts.forIngress("cilium") }, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.pick(tc.ts)
			if got.target != tc.want || got.conflict != tc.wantConflict {
				name := func(t *target) string {
					if t == nil {
						return "<none>"
					}
					return t.name
				}
				t.Fatalf("picked %s (conflict %v), want %s (conflict %v)", name(got.target), got.conflict, name(tc.want), tc.wantConflict)
			}
		})
	}
}

// discoveryCache starts a target-discovery cache over a fake clientset.
func discoveryCache(t *testing.T, objs ...runtime.Object) (*hostCache, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	s := settings{zones: []string{"."}, targetsNamespace: defaultTargetsNamespace, labels: labels.Everything(), startupTimeout: 5 * time.Second}
	hc := newHostCache(&clients{kube: client, gateway: gwfake.NewSimpleClientset(), discovery: &fakeDiscovery{served: map[string][]string{}}}, s)
	if err := hc.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.stop)
	if !hc.waitOpen(5 * time.Second) {
		t.Fatal("cache did not open")
	}
	return hc, client
}

// wantTarget waits until qname is answered with ip ("" for not answered).
func wantTarget(t *testing.T, hc *hostCache, qname, ip string) {
	t.Helper()
	eventually(t, qname+" -> "+ip, func() bool {
		tgt := hc.index().lookup(qname)
		if tgt == nil || tgt.load().empty() {
			return ip == ""
		}
		return len(tgt.load().v4) > 0 && tgt.load().v4[0].String() == ip
	})
}

func TestEveryHostGoesToItsOwnControllersTarget(t *testing.T) {
	hc, _ := discoveryCache(t,
		targetService("root", "127.77.0.10", "example.com", "tenant-root"),
		targetService("tenant-a", "127.77.0.11", "a.example.com", "tenant-a"),
		ingress("default", "dashboard", "tenant-root", "dashboard.example.com"),
		ingress("tenant-a", "app", "tenant-a", "app.a.example.com", "*.w.a.example.com"),
		ingress("tenant-a", "hijack", "tenant-a", "login.example.com", "bank.org"),
		ingress("other", "plain", "traefik", "plain.example.com"),
	)
	wantTarget(t, hc, "dashboard.example.com.", "127.77.0.10")
	wantTarget(t, hc, "app.a.example.com.", "127.77.0.11")
	wantTarget(t, hc, "x.w.a.example.com.", "127.77.0.11")
	// Outside tenant-a's zones: never answered, however it is spelled.
	wantTarget(t, hc, "login.example.com.", "")
	wantTarget(t, hc, "bank.org.", "")
	// A class no target selects: its controller may not speak PROXY.
	wantTarget(t, hc, "plain.example.com.", "")

	hc.mu.Lock()
	rejected := hc.claims.rejectedByReason()[reasonOutsideZones]
	unselected := hc.claims.unselected[kindIngress]
	hc.mu.Unlock()
	if rejected != 2 || unselected != 1 {
		t.Errorf("outside_zones %d, unselected ingresses %d; want 2 and 1", rejected, unselected)
	}
	if got := testutil.ToFloat64(targetHosts.WithLabelValues(hc.id, defaultTargetsNamespace+"/tenant-a")); got != 2 {
		t.Errorf("target_hosts{tenant-a} = %v, want 2", got)
	}
}

func TestTargetsAppearChangeAndGoLive(t *testing.T) {
	hc, client := discoveryCache(t, ingress("default", "app", "nginx", "app.example.com"))
	ctx := context.Background()
	svcs := client.CoreV1().Services(defaultTargetsNamespace)
	wantTarget(t, hc, "app.example.com.", "")

	// Appears.
	tgt := targetService("hairpin-proxy", "127.77.0.10", "example.com", "nginx")
	if _, err := svcs.Create(ctx, tgt, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.com.", "127.77.0.10")

	// New ClusterIP: one store, same entry.
	tgt.Spec.ClusterIP, tgt.Spec.ClusterIPs = "127.77.0.12", []string{"127.77.0.12"}
	if _, err := svcs.Update(ctx, tgt, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.com.", "127.77.0.12")

	// Re-annotated to another class: the host is dropped.
	tgt.Annotations[ingressClassesAnnotation] = "traefik"
	if _, err := svcs.Update(ctx, tgt, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.com.", "")

	// Malformed: disabled, counted, the rest untouched.
	tgt.Annotations[ingressClassesAnnotation] = "nginx"
	if _, err := svcs.Update(ctx, tgt, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.com.", "127.77.0.12")
	other := targetService("broken", "127.77.0.13", "example.com,,x", "nginx")
	if _, err := svcs.Create(ctx, other, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a disabled target counted", func() bool {
		return testutil.ToFloat64(targetsKnown.WithLabelValues(hc.id, stateDisabled)) == 1
	})
	wantTarget(t, hc, "app.example.com.", "127.77.0.12")

	// Unlabelled: no longer a target.
	delete(tgt.Labels, targetLabel)
	if _, err := svcs.Update(ctx, tgt, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.com.", "")
	tgt.Labels[targetLabel] = ""
	if _, err := svcs.Update(ctx, tgt, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.com.", "127.77.0.12")

	// Goes: the public answer returns.
	if err := svcs.Delete(ctx, tgt.Name, meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.com.", "")
	hc.mu.Lock()
	_, known := hc.targets[defaultTargetsNamespace+"/hairpin-proxy"]
	hc.mu.Unlock()
	if known {
		t.Error("deleted target still known")
	}
}

func TestSameHostOnTwoTargetsHasADeterministicWinner(t *testing.T) {
	hc, _ := discoveryCache(t,
		targetService("a", "127.77.0.10", "example.com", "class-a"),
		targetService("b", "127.77.0.11", "example.com", "class-b"),
		ingress("ns-b", "first", "class-b", "shared.example.com"),
		ingress("ns-a", "second", "class-a", "shared.example.com"),
	)
	// The lexically first owner wins: ingress/ns-a/second.
	wantTarget(t, hc, "shared.example.com.", "127.77.0.10")
	eventually(t, "the host conflict counted", func() bool {
		return testutil.ToFloat64(conflicts.WithLabelValues(hc.id, "host")) == 1
	})
}

func TestStoppedCacheDeletesItsSeries(t *testing.T) {
	client := fake.NewClientset(targetService("root", "127.77.0.10", "example.com", "*"), ingress("default", "app", "", "app.example.com"))
	s := settings{zones: []string{"."}, targetsNamespace: defaultTargetsNamespace, labels: labels.Everything(), startupTimeout: 5 * time.Second}
	hc := newHostCache(&clients{kube: client}, s)
	if err := hc.start(); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.com.", "127.77.0.10")
	if n := seriesOf(t, hc.id); n == 0 {
		t.Fatal("no series for the running cache")
	}
	hc.stop()
	if n := seriesOf(t, hc.id); n != 0 {
		t.Errorf("%d series of the stopped cache %s remain", n, hc.id)
	}
}

// seriesOf counts the registered series whose cache label is id.
func seriesOf(t *testing.T, id string) int {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cache" && l.GetValue() == id {
					n++
				}
			}
		}
	}
	return n
}

// A Service that is not a target in hairpin-system is never answered with.
func TestUnlabelledServiceIsNoTarget(t *testing.T) {
	plain := targetService("plain", "127.77.0.10", "example.com", "*")
	plain.Labels = nil
	hc, _ := discoveryCache(t, plain, ingress("default", "app", "", "app.example.com"))
	hc.mu.Lock()
	n := len(hc.targets)
	hc.mu.Unlock()
	if n != 0 || hc.index().lookup("app.example.com.") != nil {
		t.Errorf("an unlabelled Service became a target (%d targets)", n)
	}
}
