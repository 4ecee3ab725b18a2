package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
)

// TestStatusesFollowTheGeneration changes the spec of a Gateway and of an
// HTTPRoute whose statuses were written at generation 1: the controller
// writes its conditions again with the new observedGeneration, and leaves
// the objects it read (the informers' cache) as they were.
func TestStatusesFollowTheGeneration(t *testing.T) {
	accepted := func(gen int64) []metav1.Condition {
		var conds []metav1.Condition
		setCondition(&conds, gen, string(gw.RouteConditionAccepted), true, string(gw.RouteReasonAccepted))
		return conds
	}
	g := &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gw", Generation: 2},
		Spec:       gw.GatewaySpec{GatewayClassName: "hairpin", Listeners: []gw.Listener{{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType}}},
		Status:     gw.GatewayStatus{Listeners: []gw.ListenerStatus{{Name: "http", Conditions: accepted(1)}}},
	}
	r := &gw.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 2},
		Spec:       gw.HTTPRouteSpec{CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "gw"}}}},
		Status: gw.HTTPRouteStatus{RouteStatus: gw.RouteStatus{Parents: []gw.RouteParentStatus{{
			ParentRef: gw.ParentReference{Name: "gw"}, ControllerName: GatewayControllerName, Conditions: accepted(1),
		}}}},
	}
	for _, tc := range []struct {
		name  string
		write func(gc *GatewayController) error
		read  func(gc *GatewayController) ([]metav1.Condition, error)
	}{
		{
			name: "GatewayListener",
			write: func(gc *GatewayController) error {
				return gc.gatewayStatus(t.Context(), gatewayPlane{g: g, routes: []*gw.HTTPRoute{r}}, &corev1.Service{}, true)
			},
			read: func(gc *GatewayController) ([]metav1.Condition, error) {
				got, err := gc.gw.GatewayV1().Gateways("ns").Get(t.Context(), "gw", metav1.GetOptions{})
				if err != nil || len(got.Status.Listeners) != 1 {
					return nil, err
				}
				return got.Status.Listeners[0].Conditions, nil
			},
		},
		{
			name: "HTTPRouteParent",
			write: func(gc *GatewayController) error {
				return gc.routeStatus(t.Context(), r, []*gw.Gateway{g})
			},
			read: func(gc *GatewayController) ([]metav1.Condition, error) {
				got, err := gc.gw.GatewayV1().HTTPRoutes("ns").Get(t.Context(), "web", metav1.GetOptions{})
				if err != nil || len(got.Status.Parents) != 1 {
					return nil, err
				}
				return got.Status.Parents[0].Conditions, nil
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := gwfake.NewSimpleClientset()
			if _, err := client.GatewayV1().Gateways("ns").Create(t.Context(), g.DeepCopy(), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := client.GatewayV1().HTTPRoutes("ns").Create(t.Context(), r.DeepCopy(), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			gc := &GatewayController{gw: client}
			gBefore, rBefore := g.DeepCopy(), r.DeepCopy()
			if err := tc.write(gc); err != nil {
				t.Fatal(err)
			}
			conds, err := tc.read(gc)
			if err != nil {
				t.Fatal(err)
			}
			c := meta.FindStatusCondition(conds, "Accepted")
			if c == nil || c.ObservedGeneration != 2 {
				t.Errorf("Accepted after a spec change to generation 2: %+v, want observedGeneration 2", c)
			}
			if !equality.Semantic.DeepEqual(gBefore, g) || !equality.Semantic.DeepEqual(rBefore, r) {
				t.Errorf("the controller changed the objects it read (the informers' cache)")
			}
		})
	}
}
