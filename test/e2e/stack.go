package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// Names the stack uses.
const (
	// Zone is the public zone: the public DNS stand-in serves it and the
	// hairpin plugin may answer hosts inside it.
	Zone = "example.com"
	// GatewayClass is the GatewayClass whose Gateways the stack's hairpin
	// stanza serves (`gateway_class cilium`).
	GatewayClass = "cilium"
	// ProxyNamespace and ProxyService name the proxy Service that the
	// stack's explicit stanza names (`proxy hairpin-system/hairpin-proxy`,
	// see [ProxyStanza]). The Service carries no target label: a bare
	// `hairpin`, which discovers targets, would not answer with it.
	ProxyNamespace = "hairpin-system"
	ProxyService   = "hairpin-proxy"
)

// startTimeout bounds the start of each child.
const startTimeout = 30 * time.Second

// Stack is the hairpin picture on loopback: an ingress-nginx stand-in that
// requires the PROXY protocol on a "LoadBalancer IP", a public DNS that
// answers the zone with that IP, the proxy listening on its Service's
// ClusterIP, and two CoreDNS servers shaped like kube-system's, one without
// and one with the hairpin plugin.
type Stack struct {
	// ControlPlane is the Kubernetes API the CoreDNS servers watch.
	ControlPlane *harness.ControlPlane
	// Nginx is the ingress-nginx stand-in; it listens on LoadBalancerIP.
	Nginx *harness.Nginx
	// LoadBalancerIP is the "public" address of the ingress: what the public
	// DNS answers for every name in Zone.
	LoadBalancerIP netip.Addr
	// HTTPPort and HTTPSPort are nginx's proxy_protocol listeners on
	// LoadBalancerIP: 80 and 443 unless those could not be bound.
	HTTPPort, HTTPSPort int
	// PublicDNS ("127.0.0.1:port") is the public DNS stand-in.
	PublicDNS string
	// ProxyIP is the proxy Service's ClusterIP; the proxy listens on its
	// ports 80 and 443.
	ProxyIP netip.Addr
	// Proxy is the hairpin-proxy process; ProxyHealth its health address.
	Proxy       *harness.Process
	ProxyHealth string
	// StockDNS ("127.0.0.1:port") is our CoreDNS with the stock Corefile
	// and activation off (-hairpin.activate=false): no hairpin at all;
	// HairpinDNS the same Corefile plus the hairpin stanza.
	StockDNS, HairpinDNS string
	// UncachedDNS is a second server block of the hairpin CoreDNS without
	// `cache`, sharing the plugin's watch (same settings), for measuring
	// how soon a change is served without the cache in the way.
	UncachedDNS string
	// StockCorefile and HairpinCorefile are the two CoreDNS configurations.
	StockCorefile, HairpinCorefile string
}

// StartStack starts every child of the stack for t, against the running
// control plane cp, and returns once each of them is ready. The children
// stop in t.Cleanup. It creates the proxy Service when it is missing.
func StartStack(ctx context.Context, t testing.TB, cp *harness.ControlPlane) *Stack {
	t.Helper()
	coredns := harness.RequireBinary(t, "coredns")
	proxyBin := harness.RequireBinary(t, "hairpin-proxy")
	dir := t.TempDir()
	s := &Stack{ControlPlane: cp}

	// The ingress: nginx on a fresh loopback "LoadBalancer IP", on the real
	// ports 80/443 where it can bind them (we run as root), so that URLs
	// need no port.
	s.LoadBalancerIP = harness.FreeLoopbackIP(t)
	opts := harness.NginxOptions{IP: s.LoadBalancerIP}
	if harness.CanListen(s.LoadBalancerIP, 80) && harness.CanListen(s.LoadBalancerIP, 443) {
		opts.HTTPPort, opts.TLSPort = 80, 443
	}
	s.Nginx = harness.StartNginx(t, opts)
	s.HTTPPort, s.HTTPSPort = harness.PortOf(t, s.Nginx.HTTPAddr), harness.PortOf(t, s.Nginx.TLSAddr)

	// The public DNS.
	s.PublicDNS = harness.FreeAddr(t, "127.0.0.1")
	zoneFile := harness.WriteFile(t, dir, "example.com.zone", PublicZone(s.LoadBalancerIP))
	publicConf := harness.WriteFile(t, dir, "Corefile.public", PublicCorefile(s.PublicDNS, ZoneFile{Zone: Zone, Path: zoneFile}))
	public := harness.StartProcess(t, "public-dns", coredns, "-conf", publicConf)
	public.RequireReady(ctx, startTimeout, harness.DNSProbe(s.PublicDNS, Zone, dns.TypeSOA))

	// The proxy, on its Service's ClusterIP, in front of nginx's PROXY
	// listeners. The header port is the Service port the client dialled.
	ip, err := EnsureProxyService(ctx, cp)
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	s.ProxyIP = ip
	s.ProxyHealth = harness.FreeAddr(t, "127.0.0.1")
	s.Proxy = harness.StartProcess(t, "hairpin-proxy", proxyBin,
		"--route", fmt.Sprintf("%s=%s,header-port=80,name=http", net.JoinHostPort(ip.String(), "80"), s.Nginx.HTTPAddr),
		"--route", fmt.Sprintf("%s=%s,header-port=443,name=https", net.JoinHostPort(ip.String(), "443"), s.Nginx.TLSAddr),
		"--health-addr", s.ProxyHealth,
		// Children are stopped with SIGTERM and killed 5 s later: skip the
		// lameduck period that a Deployment needs so that teardown is quick.
		"--lameduck", "0s", "--drain-timeout", "1s")
	s.Proxy.RequireReady(ctx, startTimeout, harness.HTTPProbe("http://"+s.ProxyHealth+"/readyz"))

	// Our CoreDNS twice: the stock Corefile, and the same plus hairpin.
	s.StockDNS = harness.FreeAddr(t, "127.0.0.1")
	stock := CorefileConfig{
		Listen: s.StockDNS, Health: harness.FreeAddr(t, "127.0.0.1"), Ready: harness.FreeAddr(t, "127.0.0.1"),
		Kubeconfig: cp.Kubeconfig, Upstream: s.PublicDNS,
	}
	s.StockCorefile = Corefile(stock)
	hairpin := stock
	hairpin.Listen, hairpin.Health, hairpin.Ready = harness.FreeAddr(t, "127.0.0.1"), harness.FreeAddr(t, "127.0.0.1"), harness.FreeAddr(t, "127.0.0.1")
	hairpin.Hairpin = ProxyStanza(cp.Kubeconfig, GatewayClass)
	hairpin.Uncached = harness.FreeAddr(t, "127.0.0.1")
	s.HairpinDNS, s.UncachedDNS = hairpin.Listen, hairpin.Uncached
	s.HairpinCorefile = Corefile(hairpin)

	// Our image adds hairpin to a Corefile that names none (docs/architecture.md,
	// "Activation"); the stock side is CoreDNS as it runs without the
	// plugin, so activation is off there.
	for _, c := range []struct {
		name  string
		conf  string
		cfg   CorefileConfig
		flags []string
	}{{"coredns-stock", s.StockCorefile, stock, []string{"-hairpin.activate=false"}}, {"coredns-hairpin", s.HairpinCorefile, hairpin, nil}} {
		path := harness.WriteFile(t, dir, "Corefile."+c.name, c.conf)
		p := harness.StartProcess(t, c.name, coredns, append([]string{"-conf", path}, c.flags...)...)
		// `ready` turns 200 once kubernetes and hairpin have synced. CoreDNS
		// runs the plugins' startup hooks, which start the ready endpoint,
		// before it binds its DNS sockets, so /ready can pass a moment before
		// queries are accepted: wait for a DNS answer too.
		p.RequireReady(ctx, startTimeout, harness.HTTPProbe("http://"+c.cfg.Ready+"/ready"))
		for _, addr := range []string{c.cfg.Listen, c.cfg.Uncached} {
			if addr != "" {
				p.RequireReady(ctx, startTimeout, harness.DNSProbe(addr, Zone, dns.TypeSOA))
			}
		}
	}
	return s
}
