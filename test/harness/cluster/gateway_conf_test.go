package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gw "sigs.k8s.io/gateway-api/apis/v1"
)

func TestServedHostnameFollowsGatewayAPIIntersection(t *testing.T) {
	for _, c := range []struct {
		name, listener, route, want string
		ok                          bool
	}{
		{"a listener without hostname serves the route's", "", "app.example.com", "app.example.com", true},
		{"equal names", "app.example.com", "app.example.com", "app.example.com", true},
		{"a listener wildcard covers the route's name", "*.example.com", "app.example.com", "app.example.com", true},
		{"a route wildcard covering the listener serves the listener's", "app.example.com", "*.example.com", "app.example.com", true},
		{"a name outside the listener is not served", "www.example.com", "shop.example.com", "", false},
		{"a wildcard does not cover its own suffix", "*.example.com", "example.com", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := servedHostname(c.listener, c.route)
			if got != c.want || ok != c.ok {
				t.Errorf("servedHostname(%q, %q) = %q, %v; want %q, %v", c.listener, c.route, got, ok, c.want, c.ok)
			}
		})
	}
}

func testPlane(proxyProtocol bool, listenerHost string, routeHosts ...string) gatewayPlane {
	g := &gw.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "gateway-a"},
		Spec: gw.GatewaySpec{GatewayClassName: "nginx", Listeners: []gw.Listener{
			{Name: "http", Port: 80, Protocol: gw.HTTPProtocolType, Hostname: ptr.To(gw.Hostname(listenerHost))},
			{Name: "tls", Port: 443, Protocol: gw.HTTPSProtocolType},
		}},
	}
	r := &gw.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "gateway-a"},
		Spec:       gw.HTTPRouteSpec{CommonRouteSpec: gw.CommonRouteSpec{ParentRefs: []gw.ParentReference{{Name: "edge"}}}},
	}
	for _, h := range routeHosts {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gw.Hostname(h))
	}
	other := r.DeepCopy()
	other.Namespace = "elsewhere"
	other.Spec.Hostnames = []gw.Hostname{"foreign.example.net"}
	other.Spec.ParentRefs[0].Namespace = ptr.To(gw.Namespace("gateway-a"))
	return gatewayPlane{g: g, class: &gw.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}}, routes: []*gw.HTTPRoute{r, other}, proxyProtocol: proxyProtocol, trusted: []string{"0.0.0.0/0"}}
}

// TestGatewayConfRendersWhatNGFServes renders nginx.conf and checks its
// servers: the route hosts inside the listener's, on its HTTP port only, a
// route from a namespace the listener does not admit left out, and
// proxy_protocol on every listen exactly when the NginxProxy asks. Where
// nginx is installed, `nginx -t` accepts the file.
func TestGatewayConfRendersWhatNGFServes(t *testing.T) {
	for _, c := range []struct {
		name          string
		proxyProtocol bool
	}{{"proxy protocol", true}, {"plain", false}} {
		t.Run(c.name, func(t *testing.T) {
			p := testPlane(c.proxyProtocol, "*.a.example.net", "app.a.example.net", "www.b.example.net")
			servers := gatewayServers(p)
			if len(servers) != 1 || servers[0].Port != 80 || !slices.Equal(servers[0].Names, []string{"app.a.example.net"}) || servers[0].CatchAll {
				t.Fatalf("servers %+v; want port 80 serving only app.a.example.net", servers)
			}
			conf, err := renderGatewayConf(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(conf, "\n") {
				line = strings.TrimSpace(line)
				if !strings.HasPrefix(line, "listen 80 ") && !strings.HasPrefix(line, "listen 80;") {
					continue
				}
				if strings.Contains(line, "proxy_protocol") != c.proxyProtocol {
					t.Errorf("%q: proxy_protocol must be there exactly when the NginxProxy asks (%v)", line, c.proxyProtocol)
				}
			}
			if strings.Contains(conf, "real_ip_header proxy_protocol;") != c.proxyProtocol {
				t.Errorf("real_ip_header proxy_protocol must be there exactly when the NginxProxy asks (%v):\n%s", c.proxyProtocol, conf)
			}
			if !strings.Contains(conf, "server_name app.a.example.net;") || strings.Contains(conf, "foreign.example.net") {
				t.Errorf("want a server for app.a.example.net and none for the foreign route:\n%s", conf)
			}
			nginx, err := exec.LookPath("nginx")
			if err != nil {
				nginx = "/usr/sbin/nginx"
			}
			if _, err := os.Stat(nginx); err != nil {
				return
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "nginx.conf")
			if err := os.WriteFile(path, []byte(strings.ReplaceAll(conf, "/tmp/", dir+"/")), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(nginx, "-t", "-q", "-p", dir, "-c", path, "-e", "stderr").CombinedOutput(); err != nil {
				t.Errorf("nginx -t: %v\n%s\n%s", err, out, conf)
			}
		})
	}
}

func TestGatewayConfCatchAllWhenNeitherNamesAHost(t *testing.T) {
	p := testPlane(true, "")
	p.g.Spec.Listeners[0].Hostname = nil
	servers := gatewayServers(p)
	if len(servers) != 1 || !servers[0].CatchAll || len(servers[0].Names) != 0 {
		t.Fatalf("servers %+v; want the default server to answer", servers)
	}
}
