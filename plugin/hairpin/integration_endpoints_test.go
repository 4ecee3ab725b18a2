package hairpin

import (
	"fmt"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	"github.com/prometheus/client_golang/prometheus/testutil"
	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// targetsWaitForEndpoints: a target takes hosts only once its Service has a
// ready endpoint for each of its ports, as the EndpointSlices say, so that
// a host moves only when the new path works. Until then whatever answered
// the host before keeps answering it: another target, or the next plugin.
// Once it has had one, the target keeps its hosts while its Service exists,
// even while its endpoints are unready (its only proxy replica crashed).
func (it *integration) targetsWaitForEndpoints(t *testing.T, ns string) {
	tenant := ns + "-tenant"
	it.createNamespace(t, tenant)
	old := it.createTarget(t, ns, "tenant", map[string]string{rules.ZonesAnnotation: "a.example.com", rules.IngressClassesAnnotation: "tenant-a"})
	it.createIngress(t, ingress(tenant, "app", "tenant-a", "app.a.example.com"))
	it.createIngress(t, ingress(tenant, "new", "tenant-b", "app.b.example.com"))
	hc := it.syncedCache(t, settings{zones: []string{"."}, targetsNamespace: ns, namespaces: []string{tenant}})
	wantA(t, hc, "app.a.example.com.", old)

	// A new target takes over tenant-a's class: it sorts before the old
	// one, so it wins the object once it may take it.
	next, svc := it.createWaitingTarget(t, ns, "a-next", map[string]string{rules.ZonesAnnotation: "a.example.com", rules.IngressClassesAnnotation: "tenant-a"})
	knowsTarget(t, hc, ns+"/a-next")
	holdsA(t, hc, "app.a.example.com.", old, "the new target has no EndpointSlice")
	wantWaiting(t, hc, 1)

	steps := []struct {
		why   string
		slice func() *discovery.EndpointSlice
	}{
		{"its endpoint is not ready", func() *discovery.EndpointSlice { return harness.EndpointSliceFor(svc, false) }},
		{"its ready endpoint has none of its ports (a Pod without the named target port)", func() *discovery.EndpointSlice {
			s := harness.EndpointSliceFor(svc, true)
			s.Ports = nil
			return s
		}},
		{"its ready endpoint has one of its two ports", func() *discovery.EndpointSlice {
			s := harness.EndpointSliceFor(svc, true)
			s.Ports = s.Ports[:1]
			return s
		}},
	}
	for _, step := range steps {
		it.writeSlice(t, step.slice())
		holdsA(t, hc, "app.a.example.com.", old, step.why)
	}
	// Ready for each port: the host moves.
	it.writeSlice(t, harness.EndpointSliceFor(svc, true))
	wantA(t, hc, "app.a.example.com.", next)
	wantWaiting(t, hc, 0)

	// Its only replica crashes: the endpoint goes unready, the answer stays.
	it.writeSlice(t, harness.EndpointSliceFor(svc, false))
	holdsA(t, hc, "app.a.example.com.", next, "the moved-to target's endpoint went unready")

	// A target for a class no target served before: the next plugin keeps
	// the host until the target can serve it.
	b, bsvc := it.createWaitingTarget(t, ns, "tenant-b", map[string]string{rules.ZonesAnnotation: "b.example.com", rules.IngressClassesAnnotation: "tenant-b"})
	knowsTarget(t, hc, ns+"/tenant-b")
	holdsA(t, hc, "app.b.example.com.", "", "the new target has no ready endpoint")
	it.writeSlice(t, harness.EndpointSliceFor(bsvc, true))
	wantA(t, hc, "app.b.example.com.", b)
}

// createWaitingTarget creates a target Service with two ports and no
// EndpointSlice, and returns its ClusterIP and the Service.
func (it *integration) createWaitingTarget(t *testing.T, ns, name string, ann map[string]string) (string, *core.Service) {
	t.Helper()
	svc := &core.Service{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{rules.TargetLabel: ""}, Annotations: ann},
		Spec:       core.ServiceSpec{Ports: []core.ServicePort{{Name: "http", Port: 80}, {Name: "https", Port: 443}}},
	}
	created, err := it.kube.CoreV1().Services(ns).Create(it.ctx(t), svc, meta.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created.Spec.ClusterIP, created
}

func (it *integration) writeSlice(t *testing.T, s *discovery.EndpointSlice) {
	t.Helper()
	writeSlice(t, it.kube, s)
}

// knowsTarget waits until the cache has the target's ClusterIP.
func knowsTarget(t *testing.T, hc *hostCache, name string) {
	t.Helper()
	eventually(t, "target "+name+" known", func() bool {
		return testutil.ToFloat64(targetAddresses.WithLabelValues(hc.id, name, "ipv4")) == 1
	})
}

// wantWaiting waits until n targets wait for a ready endpoint.
func wantWaiting(t *testing.T, hc *hostCache, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d targets waiting", n), func() bool {
		return testutil.ToFloat64(targetsKnown.WithLabelValues(hc.id, rules.StateWaiting)) == float64(n)
	})
}

// holdsA fails unless qname answers A with want ("" for a pass to the next
// plugin) throughout a while after a change: long enough for the change's
// watch event to have been served.
func holdsA(t *testing.T, hc *hostCache, qname, want, why string) {
	t.Helper()
	holdAnswer(t, hc, qname, want, time.Now().Add(500*time.Millisecond), why)
}
