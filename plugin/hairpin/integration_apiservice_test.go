package hairpin

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// apiserverBackBehindRefusingService: the plugin reaches the apiserver
// through the kubernetes Service's address, as a Pod does. When the
// apiserver shuts down it takes its endpoint out of that Service, and when
// it is back the dataplane (kube-proxy, whose own reflector is still
// backing off) refuses the Service's address for up to a minute more. The
// plugin dials the apiserver's own address, learned from the Service's
// EndpointSlice before the outage, and answers an Ingress written after
// the outage within 5 s.
func (it *integration) apiserverBackBehindRefusingService(t *testing.T, ns string) {
	// The Service's address: a forwarder to the apiserver, as kube-proxy's
	// DNAT of the ClusterIP.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	apiserver := it.cp.Host()
	service := netns.Forward(l, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", apiserver)
	})
	defer service.Close()
	kubeconfig := it.kubeconfigVia(t, service.Addr().String())

	ip := it.createProxy(t, ns)
	it.createIngress(t, ingress(ns, "before", "", "before.example.com"))
	s := it.proxySettings(ns)
	s.kubeconfig = kubeconfig
	hc := it.syncedCache(t, s)
	wantA(t, hc, "before.example.com.", ip)
	// Long enough for the plugin to have seen the Service's endpoints.
	time.Sleep(time.Second)

	if err := it.cp.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	// The dataplane has dropped the Service's last endpoint: its address
	// refuses, and goes on refusing after the apiserver is back.
	if err := service.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := it.cp.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	it.createIngress(t, ingress(ns, "after", "", "after.example.com"))
	wantA(t, hc, "after.example.com.", ip)
	if took := time.Since(written); took > 5*time.Second {
		t.Errorf("the Ingress written after the outage was answered after %s; want within 5 s", took.Round(time.Millisecond))
	}
}

// kubeconfigVia writes the control plane's kubeconfig with its server at
// hostport, and returns its path. The server name the certificate is
// checked against stays the apiserver's.
func (it *integration) kubeconfigVia(t *testing.T, hostport string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(it.cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = hostport
		c.Server = u.String()
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
