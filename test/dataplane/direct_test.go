package dataplane_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/dataplane"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
)

// plain is the direct story's Gateway: NGINX Gateway Fabric without the
// PROXY protocol (its class's NginxProxy sets no rewriteClientIP), whose
// host is published at the outside router's public address.
var plain = dataplane.Gateway{
	Namespace: "gateway-c", Name: "plain", Class: "nginx-plain", ClassProxy: "nginx-plain-config",
	ListenerHost: "*.c.example.net", Hosts: []string{"app.c.example.net"}, LBIP: netip.MustParseAddr("203.0.113.22"),
}

// directValues is the chart's values for the direct story: one direct
// target answering plain's host with its data-plane Service's ClusterIP.
func directValues() string {
	return dataplane.GatewayValues(map[string]string{
		plain.Namespace: "    zones: [c.example.net]\n    gateways: [" + plain.Ref() + "]\n" +
			"    direct:\n      namespace: " + plain.Namespace + "\n      name: " + plain.ServiceName() + "\n",
	})
}

// TestDirectTargetOnTheRealDataplane tells the direct story on one mode of
// each dataplane family (dataplane.FullModes): a Gateway that needs no PROXY header, published at a
// router's public address that in-cluster clients cannot use (no NAT
// loopback), is unreachable from a Pod until a direct target answers its
// host with the Gateway Service's ClusterIP; no proxy stands in between.
func TestDirectTargetOnTheRealDataplane(t *testing.T) {
	dataplane.EachMode(t, dataplane.FullModes, directStory)
}

func directStory(t *testing.T, mode string, e *dataplane.Env) {
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	ge := e.StartGateways(t)
	ge.Create(ctx, t, plain)
	host := plain.Hosts[0]
	step := func(name string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			t.FailNow()
		}
	}

	// The router forwards its public port 80 to the Gateway's NodePort,
	// and the public DNS answers the router's address, until the end.
	svc, err := e.CP.Clientset.CoreV1().Services(plain.Namespace).Get(ctx, plain.ServiceName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	remove, err := e.PortForward(cluster.RouterPublicIP, 80, svc.Spec.Ports[0].NodePort)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := remove(); err != nil {
			t.Errorf("remove the port forward: %v", err)
		}
	})
	if err := e.SetPublicName(host, cluster.RouterPublicIP); err != nil {
		t.Fatal(err)
	}

	step("PublishedAtTheRouter", func(t *testing.T) {
		// The internet reaches the Gateway through the router, once the
		// public DNS (which re-reads its records every second) answers the
		// router's address instead of the LoadBalancer IP.
		var body string
		if err := harness.Poll(ctx, func(ctx context.Context) error {
			var err error
			body, err = e.Cluster.Curl(ctx, "http://"+host+"/")
			if err != nil || !strings.Contains(body, "gateway="+plain.Ref()) {
				return fmt.Errorf("%q, %v", body, err)
			}
			return nil
		}); err != nil {
			t.Fatalf("outside client through the router's port forward: %v", err)
		}
	})

	step("BrokenWithoutNATLoopback", func(t *testing.T) {
		if err := e.WaitResolves(ctx, host, cluster.RouterPublicIP); err != nil {
			t.Fatalf("the cluster DNS must give the public answer first: %v", err)
		}
		out, err := e.Curl(ctx, "http://"+host+"/")
		if err == nil {
			t.Fatalf("the client pod reached %s at the router's public address; want it refused or timed out (no NAT loopback); got %q", host, out)
		}
		// curl (7): the connection was refused ("Couldn't connect to
		// server" in curl 8); (28): it timed out.
		if !strings.Contains(out, "curl: (7)") && !strings.Contains(out, "curl: (28)") {
			t.Errorf("curl from the client pod failed with %q; want refused (7) or timed out (28)", out)
		}
	})

	step("InstallChartWithADirectTarget", func(t *testing.T) {
		if out, err := e.InstallValues(ctx, t, directValues()); err != nil {
			t.Fatalf("helm install: %v\n%s", err, out)
		}
		pods, err := e.CP.Clientset.CoreV1().Pods(dataplane.TargetNamespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) > 0 {
			t.Errorf("a direct target needs no proxy; the targets namespace has %d pods (%v)", len(pods.Items), err)
		}
	})

	step("FixedTheHostResolvesToTheGatewaysClusterIP", func(t *testing.T) {
		svc, err := e.CP.Clientset.CoreV1().Services(plain.Namespace).Get(ctx, plain.ServiceName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		clusterIP := netip.MustParseAddr(svc.Spec.ClusterIP)
		if err := e.WaitResolves(ctx, host, clusterIP); err != nil {
			t.Fatal(err)
		}
		body, err := e.WaitCurl(ctx, "http://"+host+"/")
		if err != nil {
			t.Fatalf("%s at the Gateway's ClusterIP: %v", host, err)
		}
		if want := "client=" + e.ClientIP().String() + " gateway=" + plain.Ref(); !strings.Contains(body, want) {
			t.Fatalf("http://%s answered %q; want it to contain %q", host, body, want)
		}
		if _, err := ge.GatewayRequest(ctx, plain, host, e.ClientIP()); err != nil {
			t.Errorf("the request did not arrive with the client pod's own address: %v", err)
		}
	})

	step("UninstallRestoresThePublicAnswer", func(t *testing.T) {
		if out, err := e.Uninstall(ctx); err != nil {
			t.Fatalf("helm uninstall: %v\n%s", err, out)
		}
		if err := e.WaitResolves(ctx, host, cluster.RouterPublicIP); err != nil {
			t.Fatal(err)
		}
		if err := e.WaitNothingLeft(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := e.CP.Clientset.RbacV1().Roles(plain.Namespace).Get(ctx, "hairpin-coredns-direct", metav1.GetOptions{}); err == nil {
			t.Errorf("the direct target's Role in %s is still there", plain.Namespace)
		}
	})
}
