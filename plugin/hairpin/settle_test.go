package hairpin

import (
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"

	core "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// A host moves away from a target whose Service is ready to a new target
// only once the new one has been ready for the settle time: the node's
// dataplane programs a new Service's endpoints after the EndpointSlice says
// ready (kube-proxy's min sync period is 1 s), and until then the new
// ClusterIP does not work. A host that no ready target answers takes a new
// target at once: it has no working path to keep.
func TestHostMovesToANewTargetOnceItSettled(t *testing.T) {
	const (
		settle = 800 * time.Millisecond
		host   = "app.example.com."
		oldIP  = "127.77.0.10"
		nextIP = "127.77.0.11"
	)
	cases := []struct {
		name string
		// old: a target answers the host before; oldCrashed: its only
		// endpoint went unready before the new target came.
		old, oldCrashed bool
		// flap: the new target's endpoint goes unready again before the
		// deadline, and ready later.
		flap bool
		// wantHold: the host keeps the old answer until the new target
		// has been ready for the settle time.
		wantHold bool
	}{
		{name: "host answered by a ready target keeps it until the new target settled", old: true, wantHold: true},
		{name: "host answered by no target takes the new target at once"},
		{name: "host whose target lost its ready endpoint takes the new target at once", old: true, oldCrashed: true},
		{name: "new target unready before the deadline holds the host until it settled again", old: true, flap: true, wantHold: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{ingress("default", "app", "tenant", "app.example.com")}
			var old *core.Service
			if tc.old {
				old = servedTarget("tenant", oldIP)
				objs = append(objs, old, harness.EndpointSliceFor(old, true))
			}
			client := fake.NewClientset(objs...)
			hc := discoveryCacheWith(t, client, settings{startupTimeout: 5 * time.Second, settle: settle})
			want := ""
			if tc.old {
				want = oldIP
			}
			wantTarget(t, hc, host, want)
			if tc.oldCrashed {
				writeSlice(t, client, harness.EndpointSliceFor(old, false))
				holdAnswer(t, hc, host, want, time.Now().Add(300*time.Millisecond), "the old target's endpoint went unready")
			}

			// "next" sorts before "tenant": it wins the class once it may.
			next := servedTarget("next", nextIP)
			if _, err := client.CoreV1().Services(next.Namespace).Create(t.Context(), next, meta.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			writeSlice(t, client, harness.EndpointSliceFor(next, true))
			readyAt := readySince(t, hc, next)
			if tc.flap {
				time.Sleep(time.Until(readyAt.Add(settle / 2)))
				writeSlice(t, client, harness.EndpointSliceFor(next, false))
				eventually(t, "the new target unready", func() bool { return readiness(hc, next).IsZero() })
				holdAnswer(t, hc, host, want, readyAt.Add(settle+300*time.Millisecond), "the new target's endpoint went unready before its deadline")
				writeSlice(t, client, harness.EndpointSliceFor(next, true))
				readyAt = readySince(t, hc, next)
			}
			if tc.wantHold {
				holdAnswer(t, hc, host, want, readyAt.Add(settle-100*time.Millisecond), "the new target has been ready for less than the settle time")
				movesBy(t, hc, host, nextIP, readyAt.Add(settle+time.Second))
				return
			}
			movesBy(t, hc, host, nextIP, readyAt.Add(settle/2))
		})
	}
}

// servedTarget is a target Service of the "tenant" class in example.com
// with one named port, as the chart writes it.
func servedTarget(name, clusterIP string) *core.Service {
	svc := targetService(name, clusterIP, "example.com", "tenant")
	svc.Spec.Ports = []core.ServicePort{{Name: "http", Port: 80}}
	return svc
}

// readiness is when the cache saw svc's target become ready, zero while
// it is not (or unknown).
func readiness(hc *hostCache, svc *core.Service) time.Time {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if t := hc.targets[svc.Namespace+"/"+svc.Name]; t != nil {
		return t.readySince
	}
	return time.Time{}
}

// readySince waits until the cache has seen svc's target become ready, and
// returns when.
func readySince(t *testing.T, hc *hostCache, svc *core.Service) time.Time {
	t.Helper()
	var at time.Time
	eventually(t, svc.Name+" ready", func() bool { at = readiness(hc, svc); return !at.IsZero() })
	return at
}

// writeSlice creates or replaces an EndpointSlice.
func writeSlice(t *testing.T, client kubernetes.Interface, s *discovery.EndpointSlice) {
	t.Helper()
	if err := harness.WriteEndpointSlice(t.Context(), client, s); err != nil {
		t.Fatal(err)
	}
}

// holdAnswer fails unless qname answers A with want ("" for a pass to the
// next plugin) from now until until.
func holdAnswer(t *testing.T, hc *hostCache, qname, want string, until time.Time, why string) {
	t.Helper()
	for ; time.Now().Before(until); time.Sleep(10 * time.Millisecond) {
		if got := answerA(hc, qname); got != want {
			t.Fatalf("%s A while %s: got %q, want %q", qname, why, got, want)
		}
	}
}

// movesBy fails unless qname answers A with want by the deadline: the
// move is scheduled, not found by a later poll.
func movesBy(t *testing.T, hc *hostCache, qname, want string, deadline time.Time) {
	t.Helper()
	for answerA(hc, qname) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s A = %q at %s, want %q", qname, answerA(hc, qname), deadline.Format(time.StampMilli), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
