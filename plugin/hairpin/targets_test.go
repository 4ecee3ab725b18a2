package hairpin

import (
	"context"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// discoveryCache starts a target-discovery cache over a fake clientset.
func discoveryCache(t *testing.T, objs ...runtime.Object) (*hostCache, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	return discoveryCacheOf(t, client, 5*time.Second), client
}

// discoveryCacheOf starts a target-discovery cache over client and waits
// until it serves.
func discoveryCacheOf(t *testing.T, client *fake.Clientset, startupTimeout time.Duration) *hostCache {
	t.Helper()
	return discoveryCacheWith(t, client, settings{startupTimeout: startupTimeout})
}

// discoveryCacheWith starts a target-discovery cache over client with s
// (its zones, namespace and labels filled in) and waits until it serves.
func discoveryCacheWith(t *testing.T, client *fake.Clientset, s settings) *hostCache {
	t.Helper()
	s.zones, s.targetsNamespace, s.labels = []string{"."}, defaultTargetsNamespace, labels.Everything()
	hc := newHostCache(&clients{kube: client, gateway: gwfake.NewSimpleClientset(), discovery: &fakeDiscovery{served: map[string][]string{}}}, s)
	if err := hc.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.stop)
	if !hc.waitOpen(5 * time.Second) {
		t.Fatal("cache did not open")
	}
	return hc
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
	rejected := hc.claims.rejectedByReason()[rules.ReasonOutsideZones]
	unselected := hc.claims.unselected[rules.KindIngress]
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
	tgt.Annotations[rules.IngressClassesAnnotation] = "traefik"
	if _, err := svcs.Update(ctx, tgt, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.com.", "")

	// Malformed: disabled, counted, the rest untouched.
	tgt.Annotations[rules.IngressClassesAnnotation] = "nginx"
	if _, err := svcs.Update(ctx, tgt, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.com.", "127.77.0.12")
	other := targetService("broken", "127.77.0.13", "example.com,,x", "nginx")
	if _, err := svcs.Create(ctx, other, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a disabled target counted", func() bool {
		return testutil.ToFloat64(targetsKnown.WithLabelValues(hc.id, rules.StateDisabled)) == 1
	})
	wantTarget(t, hc, "app.example.com.", "127.77.0.12")

	// Unlabelled: no longer a target.
	delete(tgt.Labels, rules.TargetLabel)
	if _, err := svcs.Update(ctx, tgt, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.com.", "")
	tgt.Labels[rules.TargetLabel] = ""
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
