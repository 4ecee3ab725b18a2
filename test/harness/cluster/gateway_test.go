package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// TestGatewayControllerProgramsFromObjects runs the Gateway controller
// against a real apiserver (no node): from a GatewayClass whose NginxProxy
// says ProxyProtocol, a Gateway and an HTTPRoute it writes the data plane
// as NGF names it and the statuses, and re-renders nginx.conf when the
// route's hostnames change. An NginxProxy without the mode is rejected by
// the CRD as NGF's is. The controller writes a data plane's objects one
// after another, and a loaded machine can leave seconds between them: the
// test must wait for each object it reads, however late it comes.
func TestGatewayControllerProgramsFromObjects(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	for _, tc := range []struct {
		name       string
		afterWrite func(kind, namespace, name string)
	}{
		{name: "DataPlaneWrittenAtOnce"},
		{name: "DataPlaneWrittenLongAfterTheConfigMap", afterWrite: func(kind, _, _ string) {
			if kind == "ConfigMap" {
				time.Sleep(1500 * time.Millisecond)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { testGatewayControllerPrograms(t, tc.afterWrite) })
	}
}

func testGatewayControllerPrograms(t *testing.T, afterWrite func(kind, namespace, name string)) {
	cp := harness.NewControlPlane(t, harness.ControlPlaneOptions{GatewayAPI: harness.GatewayStandard})
	c := &Cluster{CP: cp}
	gc, err := c.startGatewayController(t, afterWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := gc.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cs := cp.Clientset
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gw"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	proxy := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": NginxProxyGVR.GroupVersion().String(), "kind": "NginxProxy",
			"metadata": map[string]any{"name": "pp", "namespace": "gw"}, "spec": spec,
		}}
	}
	nps := gc.dyn.Resource(NginxProxyGVR).Namespace("gw")
	if _, err := nps.Create(ctx, proxy(map[string]any{"rewriteClientIP": map[string]any{"mode": "ProxyProtocol"}}), metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "trustedAddresses") {
		t.Errorf("an NginxProxy with a mode but no trustedAddresses: %v; want NGF's rule to reject it", err)
	}
	if _, err := nps.Create(ctx, proxy(map[string]any{"rewriteClientIP": map[string]any{
		"mode": "ProxyProtocol", "trustedAddresses": []any{map[string]any{"type": "CIDR", "value": "10.0.0.0/8"}},
	}}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gwc := gc.gw.GatewayV1()
	if _, err := gwc.GatewayClasses().Create(ctx, &gw.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
		Spec: gw.GatewayClassSpec{ControllerName: GatewayControllerName, ParametersRef: &gw.ParametersReference{
			Group: "gateway.nginx.org", Kind: "NginxProxy", Name: "pp", Namespace: ptr.To(gw.Namespace("gw")),
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	route := &gw.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "gw"},
		Spec: gw.HTTPRouteSpec{
			CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}},
			Hostnames:       []gw.Hostname{"app.example.com"},
		},
	}
	if route, err = gwc.HTTPRoutes("gw").Create(ctx, route, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Gateway comes last, once the controller holds all its nginx.conf
	// is rendered from: its first pass writes the final ConfigMap, then
	// the Deployment and the Service, so that a pause after the ConfigMap
	// (afterWrite) finds any read of the others that does not wait.
	harness.Eventually(t, time.Minute, "the controller's caches to hold the NginxProxy, GatewayClass and HTTPRoute", func() bool {
		_, errP := gc.lists.proxies.ByNamespace("gw").Get("pp")
		_, errC := gc.lists.classes.Get("nginx")
		_, errR := gc.lists.routes.HTTPRoutes("gw").Get("app")
		return errP == nil && errC == nil && errR == nil
	})
	if _, err := gwc.Gateways("gw").Create(ctx, &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "gw"},
		Spec: gw.GatewaySpec{GatewayClassName: "nginx", Listeners: []gw.Listener{
			{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType, Hostname: ptr.To(gw.Hostname("*.example.com"))},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	name := GatewayServiceName("edge", "nginx")
	// conf returns the nginx.conf that has all of want: what the test
	// asserts of it next is then of the rendering it waited for, not of a
	// second Get with no wait of its own.
	conf := func(want ...string) (string, error) {
		var text string
		err := harness.Poll(ctx, func(ctx context.Context) error {
			cm, err := cs.CoreV1().ConfigMaps("gw").Get(ctx, name+"-config", metav1.GetOptions{})
			if err != nil {
				return err
			}
			text = cm.Data["nginx.conf"]
			for _, w := range want {
				if !strings.Contains(text, w) {
					return fmt.Errorf("nginx.conf lacks %q:\n%s", w, text)
				}
			}
			return nil
		})
		return text, err
	}
	if _, err := conf("listen 80 proxy_protocol default_server;", "server_name app.example.com;", "set_real_ip_from 10.0.0.0/8;"); err != nil {
		t.Fatal(err)
	}
	// The controller writes the Deployment and the Service after the
	// ConfigMap, each in a request of its own.
	svc, err := harness.PollGet(ctx, cs.CoreV1().Services("gw").Get, name)
	if err != nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 {
		t.Fatalf("Service %s: %+v, %v; want a LoadBalancer on port 80", name, svc, err)
	}
	if dep, err := harness.PollGet(ctx, cs.AppsV1().Deployments("gw").Get, name); err != nil || dep.OwnerReferences[0].Name != "edge" {
		t.Fatalf("Deployment %s: %v; want one owned by the Gateway", name, err)
	}
	if err := harness.Poll(ctx, func(ctx context.Context) error {
		g, err := gwc.Gateways("gw").Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(g.Status.Conditions, string(gw.GatewayConditionAccepted)) || len(g.Status.Listeners) != 1 || g.Status.Listeners[0].AttachedRoutes != 1 {
			return fmt.Errorf("gateway status %+v", g.Status)
		}
		// No load balancer and no node here: not Programmed.
		if meta.IsStatusConditionTrue(g.Status.Conditions, string(gw.GatewayConditionProgrammed)) {
			return fmt.Errorf("Programmed without an address or a running data plane: %+v", g.Status)
		}
		r, err := gwc.HTTPRoutes("gw").Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(r.Status.Parents) != 1 || !meta.IsStatusConditionTrue(r.Status.Parents[0].Conditions, string(gw.RouteConditionAccepted)) {
			return fmt.Errorf("route status %+v", r.Status)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// A hostname added to the route is rendered; one outside the listener
	// is not.
	route, err = gwc.HTTPRoutes("gw").Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	route.Spec.Hostnames = append(route.Spec.Hostnames, "new.example.com", "other.example.org")
	if _, err := gwc.HTTPRoutes("gw").Update(ctx, route, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	text, err := conf("server_name new.example.com;")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "other.example.org") {
		t.Errorf("a route hostname outside the listener's is served:\n%s", text)
	}
}
