package dataplane_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	gw "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coredns-hairpin/hairpin/test/dataplane"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// The Gateway story's two Gateways, both requiring PROXY: one that its
// target selects by GatewayClass (its class's NginxProxy says
// ProxyProtocol), one of a second class that its target selects by name
// (its own NginxProxy, through spec.infrastructure.parametersRef, says so).
// The first one's listener names no hostname, so that only its route's
// hostnames are answered: a route hostname added or removed is the whole
// change.
var (
	byClass = dataplane.Gateway{
		Namespace: "gateway-a", Name: "edge", Class: "nginx", ClassProxy: "nginx-proxy-config", ProxyProtocol: true,
		Hosts: []string{"app.a.example.net"}, LBIP: netip.MustParseAddr("203.0.113.20"),
	}
	byName = dataplane.Gateway{
		Namespace: "gateway-b", Name: "shop", Class: "nginx-b", GatewayProxy: "shop-proxy", ProxyProtocol: true,
		ListenerHost: "*.b.example.net", Hosts: []string{"shop.b.example.net", "www.b.example.net"}, LBIP: netip.MustParseAddr("203.0.113.21"),
	}
)

// gatewayValues is the chart's values for the story: a target per Gateway.
func gatewayValues() string {
	return dataplane.GatewayValues(map[string]string{
		byClass.Namespace: dataplane.ProxyTarget(byClass, "a.example.net", "gatewayClasses: ["+byClass.Class+"]", 8180),
		byName.Namespace:  dataplane.ProxyTarget(byName, "b.example.net", "gateways: ["+byName.Ref()+"]", 8181),
	})
}

// TestGatewayOnTheRealDataplane tells the Gateway API story on one mode of
// each dataplane family (dataplane.FullModes): NGINX Gateway Fabric's data plane with rewriteClientIP
// ProxyProtocol drops in-cluster clients until the chart's targets front
// it, follows route and listener changes live, and uninstalls cleanly.
func TestGatewayOnTheRealDataplane(t *testing.T) {
	dataplane.EachMode(t, dataplane.FullModes, gatewayStory)
}

func gatewayStory(t *testing.T, mode string, e *dataplane.Env) {
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	ge := e.StartGateways(t)
	ge.Create(ctx, t, byClass, byName)
	gateways := []dataplane.Gateway{byClass, byName}
	step := func(name string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			t.FailNow()
		}
	}

	step("BrokenWithoutHairpin", func(t *testing.T) {
		for _, g := range gateways {
			for _, host := range g.Hosts {
				if err := e.WaitResolves(ctx, host, g.LBIP); err != nil {
					t.Fatalf("the cluster DNS must give the public answer first: %v", err)
				}
				if out, err := e.Curl(ctx, "http://"+host+"/"); err == nil {
					t.Fatalf("the client pod reached %s through the short-circuited LB IP; want the Gateway to drop the headerless connection; got %q", host, out)
				}
			}
			if err := harness.Poll(ctx, func(ctx context.Context) error {
				log, err := e.GatewayErrorLog(ctx, g.Namespace, g.Name)
				if err != nil || !strings.Contains(log, "broken header") {
					return fmt.Errorf("no broken header in gateway %s's log yet (%v)", g.Ref(), err)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	})

	step("InstallChart", func(t *testing.T) {
		if out, err := e.InstallValues(ctx, t, gatewayValues()); err != nil {
			t.Fatalf("helm install: %v\n%s", err, out)
		}
	})

	step("FixedEachHostReachesItsGateway", func(t *testing.T) {
		for i, g := range gateways {
			other := gateways[1-i]
			target, err := e.TargetIPOf(ctx, g.Namespace)
			if err != nil {
				t.Fatal(err)
			}
			for _, host := range g.Hosts {
				if err := e.WaitResolves(ctx, host, target); err != nil {
					t.Fatal(err)
				}
				body, err := e.WaitCurl(ctx, "http://"+host+"/")
				if err != nil {
					t.Fatalf("%s through the target: %v", host, err)
				}
				want := fmt.Sprintf("client=%s gateway=%s", e.ClientIP(), g.Ref())
				if !strings.Contains(body, want) {
					t.Fatalf("http://%s answered %q; want it to contain %q", host, body, want)
				}
				if _, err := ge.GatewayRequest(ctx, g, host, e.ClientIP()); err != nil {
					t.Errorf("no request from the client pod: %v", err)
				}
				if reqs, _ := e.GatewayAccessLog(ctx, other.Namespace, other.Name); hasHost(reqs, host) {
					t.Errorf("%s reached the other Gateway %s", host, other.Ref())
				}
			}
		}
	})

	step("RouteHostnameAddedThenRemovedWithinOneSecond", func(t *testing.T) {
		const added = "new.a.example.net"
		target, err := e.TargetIPOf(ctx, byClass.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		// external-dns publishes the new host at the Gateway's address, and
		// the cluster DNS serves that public answer before the change: the
		// drop below is then the plugin's alone, not the wait for the public
		// DNS to reload or for a negative answer cached meanwhile to expire.
		if err := e.SetPublicName(added, byClass.LBIP); err != nil {
			t.Fatal(err)
		}
		if err := e.WaitResolves(ctx, added, byClass.LBIP); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := e.DeletePublicName(added); err != nil {
				t.Error(err)
			}
		}()
		routes := ge.GW.GatewayV1().HTTPRoutes(byClass.Namespace)
		setHosts := func(hosts []string) func(ctx context.Context) (metav1.Object, error) {
			return func(ctx context.Context) (metav1.Object, error) {
				r, err := routes.Get(ctx, byClass.Name, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				r.Spec.Hostnames = nil
				for _, h := range hosts {
					r.Spec.Hostnames = append(r.Spec.Hostnames, gw.Hostname(h))
				}
				return routes.Update(ctx, r, metav1.UpdateOptions{})
			}
		}
		watchRoute := func(ctx context.Context) (watch.Interface, error) {
			return routes.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + byClass.Name})
		}
		for _, c := range []struct {
			what  string
			hosts []string
			want  netip.Addr
		}{
			{"added", append([]string{added}, byClass.Hosts...), target},
			{"removed", byClass.Hosts, byClass.LBIP},
		} {
			event, err := changeAt(ctx, watchRoute, setHosts(c.hosts))
			if err != nil {
				t.Fatal(err)
			}
			answered, err := e.WaitAnswered(ctx, added, c.want)
			if err != nil {
				t.Fatalf("%s %s: %v", c.what, added, err)
			}
			delay := answered.Sub(event)
			t.Logf("route hostname %s %s: every kube-dns replica answers %s %s after its watch event", added, c.what, c.want, delay.Round(time.Millisecond))
			if delay > time.Second {
				t.Errorf("route hostname %s %s: answered %s after the watch event; want within 1s", added, c.what, delay)
			}
			if c.what == "added" {
				// The controller re-renders nginx.conf; the request reaches
				// the Gateway once its agent has reloaded nginx.
				want := "client=" + e.ClientIP().String() + " gateway=" + byClass.Ref()
				if err := waitBody(ctx, e, "http://"+added+"/", want); err != nil {
					t.Fatalf("http://%s after the route change: %v", added, err)
				}
			}
		}
	})

	step("NarrowedListenerNoLongerAnswersTheRouteHostOutsideIt", func(t *testing.T) {
		const narrowed = "www.b.example.net"
		outside, inside := byName.Hosts[0], byName.Hosts[1]
		target, err := e.TargetIPOf(ctx, byName.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		gateways := ge.GW.GatewayV1().Gateways(byName.Namespace)
		setListener := func(host string) func(ctx context.Context) (metav1.Object, error) {
			return func(ctx context.Context) (metav1.Object, error) {
				g, err := gateways.Get(ctx, byName.Name, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				g.Spec.Listeners[0].Hostname = ptr.To(gw.Hostname(host))
				return gateways.Update(ctx, g, metav1.UpdateOptions{})
			}
		}
		watchGateway := func(ctx context.Context) (watch.Interface, error) {
			return gateways.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + byName.Name})
		}
		event, err := changeAt(ctx, watchGateway, setListener(narrowed))
		if err != nil {
			t.Fatal(err)
		}
		answered, err := e.WaitAnswered(ctx, outside, byName.LBIP)
		if err != nil {
			t.Fatalf("%s outside the narrowed listener %s: %v", outside, narrowed, err)
		}
		t.Logf("listener narrowed to %s: %s is no longer answered %s after the watch event", narrowed, outside, answered.Sub(event).Round(time.Millisecond))
		if err := e.WaitResolves(ctx, inside, target); err != nil {
			t.Errorf("%s, inside the narrowed listener: %v", inside, err)
		}
		if err := waitBody(ctx, e, "http://"+inside+"/", "gateway="+byName.Ref()); err != nil {
			t.Errorf("http://%s after the narrowing: %v", inside, err)
		}
	})

	step("UninstallRestoresThePublicAnswers", func(t *testing.T) {
		if out, err := e.Uninstall(ctx); err != nil {
			t.Fatalf("helm uninstall: %v\n%s", err, out)
		}
		for _, g := range gateways {
			for _, host := range g.Hosts {
				if err := e.WaitResolves(ctx, host, g.LBIP); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := e.WaitNothingLeft(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// changeAt makes change while watching the object it changes, and returns
// when the watch delivered the change's event: the moment CoreDNS's own
// watch can have it too. change is retried on a conflict (the controller
// writes the object's status meanwhile).
func changeAt(ctx context.Context, open func(ctx context.Context) (watch.Interface, error), change func(ctx context.Context) (metav1.Object, error)) (time.Time, error) {
	w, err := open(ctx)
	if err != nil {
		return time.Time{}, err
	}
	defer w.Stop()
	var mu sync.Mutex
	seen := map[string]time.Time{}
	go func() {
		for ev := range w.ResultChan() {
			if o, ok := ev.Object.(metav1.Object); ok && ev.Type == watch.Modified {
				mu.Lock()
				seen[o.GetResourceVersion()] = time.Now()
				mu.Unlock()
			}
		}
	}()
	var obj metav1.Object
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() (err error) {
		obj, err = change(ctx)
		return err
	}); err != nil {
		return time.Time{}, err
	}
	var at time.Time
	err = harness.PollEvery(ctx, time.Millisecond, func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		var ok bool
		if at, ok = seen[obj.GetResourceVersion()]; !ok {
			return fmt.Errorf("no watch event for resourceVersion %s yet", obj.GetResourceVersion())
		}
		return nil
	})
	return at, err
}

// waitBody requests url from the client Pod until the body holds want, up
// to 30 s: until the Gateway's agent has reloaded nginx with the
// re-rendered configuration, its default server answers 404.
func waitBody(ctx context.Context, e *dataplane.Env, url, want string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return harness.Poll(ctx, func(ctx context.Context) error {
		body, err := e.Curl(ctx, url)
		if err != nil || !strings.Contains(body, want) {
			return fmt.Errorf("%q, %v; want it to contain %q", body, err, want)
		}
		return nil
	})
}

func hasHost(reqs []harness.AccessLogEntry, host string) bool {
	for _, r := range reqs {
		if r.Host == host {
			return true
		}
	}
	return false
}
