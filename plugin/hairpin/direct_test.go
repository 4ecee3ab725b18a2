package hairpin

import (
	"context"
	"strings"
	"testing"

	core "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
)

// directTarget is a direct target in hairpin-system: headless, the zones
// and Ingress classes it selects, and the Service it answers with.
func directTarget(name, zones, ingressClasses, service string) *core.Service {
	svc := targetService(name, core.ClusterIPNone, zones, ingressClasses)
	svc.Annotations[rules.DirectServiceAnnotation] = service
	return svc
}

// controllerService is a controller's own Service, selectorless like the
// Cilium Gateway's.
func controllerService(ns, name string, clusterIPs ...string) *core.Service {
	return &core.Service{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name},
		Spec:       core.ServiceSpec{ClusterIP: clusterIPs[0], ClusterIPs: clusterIPs},
	}
}

func TestDirectTargetAnswersWithTheNamedServicesClusterIP(t *testing.T) {
	hc, client := discoveryCache(t,
		directTarget("cilium", "example.net", "cilium", "gateways/cilium-gateway-public"),
		controllerService("gateways", "cilium-gateway-public", "127.77.1.10"),
		ingress("default", "app", "cilium", "app.example.net"),
		ingress("default", "hijack", "cilium", "login.example.com"),
	)
	wantTarget(t, hc, "app.example.net.", "127.77.1.10")
	// The zones guard holds as for a proxied target.
	wantTarget(t, hc, "login.example.com.", "")

	// The named Service's ClusterIP changes: followed live.
	ctx := context.Background()
	svcs := client.CoreV1().Services("gateways")
	svc := controllerService("gateways", "cilium-gateway-public", "127.77.1.11")
	if _, err := svcs.Update(ctx, svc, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.net.", "127.77.1.11")

	// Deleted: the target is degraded, its hosts pass through, DNS goes on.
	if err := svcs.Delete(ctx, svc.Name, meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.net.", "")
	if got := testutil.ToFloat64(targetAddresses.WithLabelValues(hc.id, defaultTargetsNamespace+"/cilium", "ipv4")); got != 0 {
		t.Errorf("target_addresses{cilium} = %v after its Service went; want 0", got)
	}
	// And back.
	if _, err := svcs.Create(ctx, svc, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.net.", "127.77.1.11")
}

func TestDirectTargetWithAMissingServiceIsDegradedNotADNSFault(t *testing.T) {
	hc, client := discoveryCache(t,
		directTarget("cilium", "example.net", "cilium", "gateways/absent"),
		targetService("nginx", "127.77.0.10", "example.com", "nginx"),
		ingress("default", "app", "cilium", "app.example.net"),
		ingress("default", "web", "nginx", "web.example.com"),
	)
	wantTarget(t, hc, "web.example.com.", "127.77.0.10")
	wantTarget(t, hc, "app.example.net.", "")
	eventually(t, "the direct watch listed", func() bool {
		hc.mu.Lock()
		defer hc.mu.Unlock()
		return hc.directMissing[defaultTargetsNamespace+"/cilium"]
	})
	if !hc.serving() {
		t.Error("a missing direct Service must not hold readiness")
	}
	// Created later: served without a restart.
	if _, err := client.CoreV1().Services("gateways").Create(context.Background(), controllerService("gateways", "absent", "127.77.1.20"), meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.net.", "127.77.1.20")
}

func TestDirectWatchesFollowTheNamedNamespaces(t *testing.T) {
	hc, client := discoveryCache(t,
		directTarget("cilium", "example.net", "cilium", "gateways/public"),
		controllerService("gateways", "public", "127.77.1.10"),
		controllerService("other", "public", "127.77.2.10"),
		ingress("default", "app", "cilium", "app.example.net"),
	)
	wantTarget(t, hc, "app.example.net.", "127.77.1.10")
	watched := func() string {
		hc.mu.Lock()
		defer hc.mu.Unlock()
		var ns []string
		for n := range hc.direct {
			ns = append(ns, n)
		}
		return strings.Join(ns, ",")
	}
	if got := watched(); got != "gateways" {
		t.Errorf("direct watches %q; want only gateways", got)
	}
	// Re-pointed at another namespace: that one is watched, the old one not.
	ctx := context.Background()
	tgt := directTarget("cilium", "example.net", "cilium", "other/public")
	if _, err := client.CoreV1().Services(defaultTargetsNamespace).Update(ctx, tgt, meta.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.net.", "127.77.2.10")
	eventually(t, "only other watched", func() bool { return watched() == "other" })
	// The target goes: no watch is left.
	if err := client.CoreV1().Services(defaultTargetsNamespace).Delete(ctx, tgt.Name, meta.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTarget(t, hc, "app.example.net.", "")
	eventually(t, "no direct watch", func() bool { return watched() == "" })
}
