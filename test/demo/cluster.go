package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// distribution is the Corefile the cluster's CoreDNS runs: Talos's, as
// Cozystack (which runs one ingress controller per tenant) deploys it.
const distribution, distributionName = "talos", "Talos"

// startTimeout bounds the start of each child.
const startTimeout = 30 * time.Second

// controller is one ingress controller of the cluster: an nginx configured
// as ingress-nginx with use-proxy-protocol, on its own "LoadBalancer IP",
// serving one Ingress class and one zone.
type controller struct {
	// class is the IngressClass, and the namespace the controller and its
	// Ingress live in (Cozystack names both after the tenant).
	class string
	// zone is the public zone whose names point at lb; host is the
	// tenant's Ingress host in it.
	zone, host string
	// service is the controller's Service name in namespace class, which
	// the chart's target names as its upstream.
	service string
	nginx   *harness.Nginx
	lb      netip.Addr
	// target is the target Service's ClusterIP, once the chart is installed.
	target netip.Addr
}

// cluster is everything that exists before our chart: the control plane,
// the controllers with their Ingresses, the public DNS, and the cluster's
// CoreDNS with a distribution's stock Corefile and our image.
type cluster struct {
	cp          *harness.ControlPlane
	controllers []*controller
	publicDNS   string
	// dns is the cluster DNS ("127.0.0.1:port"), coredns its process.
	dns     string
	coredns *harness.Process
	// corefile is the path CoreDNS reads; stock the stock text there, as
	// the distribution renders it (with the loopback substitutions of
	// e2e.LocalCorefile), and stockPath a copy of it to compare against.
	corefile, stock, stockPath string
	dir                        string
}

// newControllers returns the two tenants' controllers, not yet started.
func newControllers() []*controller {
	return []*controller{
		{class: "tenant-root", zone: "example.com", host: "www.example.com", service: "root-ingress-controller"},
		{class: "tenant-a", zone: "a.example.org", host: "shop.a.example.org", service: "a-ingress-controller"},
	}
}

// startCluster starts the cluster for t.
func startCluster(ctx context.Context, t testing.TB, dir string) (*cluster, error) {
	corednsBin := harness.RequireBinary(t, "coredns")
	c := &cluster{controllers: newControllers(), dir: dir}
	cp, err := harness.StartControlPlane(harness.ControlPlaneOptions{
		Dir:        filepath.Join(dir, "controlplane"),
		GatewayAPI: harness.GatewayStandard,
	})
	if err != nil {
		return nil, fmt.Errorf("start the control plane: %w", err)
	}
	c.cp = cp
	// Registered first, so it runs last: after CoreDNS has closed its watches.
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Logf("stop the control plane: %v", err)
		}
	})

	// The controllers, on the real ports 80/443 where they can bind them.
	var zones []e2e.ZoneFile
	for _, ctl := range c.controllers {
		ctl.lb = harness.FreeLoopbackIP(t)
		opts := harness.NginxOptions{Name: "nginx-" + ctl.class, IP: ctl.lb, Hosts: []string{ctl.host, ctl.lb.String()}}
		if harness.CanListen(ctl.lb, 80) && harness.CanListen(ctl.lb, 443) {
			opts.HTTPPort, opts.TLSPort = 80, 443
		}
		ctl.nginx = harness.StartNginx(t, opts)
		zones = append(zones, e2e.ZoneFile{Zone: ctl.zone,
			Path: harness.WriteFile(t, dir, ctl.zone+".zone", e2e.ZoneText(ctl.zone, ctl.lb))})
		if _, err := e2e.CreateIngressOfClass(ctx, cp, ctl.class, "shop", ctl.class, ctl.host); err != nil {
			return nil, err
		}
	}

	// The public DNS: each zone on its controller's load balancer.
	c.publicDNS = harness.FreeAddr(t, "127.0.0.1")
	public := harness.StartProcess(t, "public-dns", corednsBin, "-conf",
		harness.WriteFile(t, dir, "Corefile.public", e2e.PublicCorefile(c.publicDNS, zones...)))
	if err := ready(ctx, public, harness.DNSProbe(c.publicDNS, c.controllers[0].zone, dns.TypeSOA)); err != nil {
		return nil, err
	}

	// The cluster's CoreDNS: our image, the distribution's stock Corefile,
	// as kube-system/coredns with the distribution's RBAC, which has nothing
	// for hairpin: the chart grants that.
	src, err := e2e.DistributionCorefile(distribution)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := corednsKubeconfig(ctx, cp)
	if err != nil {
		return nil, err
	}
	env := e2e.LocalEnv{
		Listen: harness.FreeAddr(t, "127.0.0.1"), Health: harness.FreeAddr(t, "127.0.0.1"),
		Ready: harness.FreeAddr(t, "127.0.0.1"), Metrics: harness.FreeAddr(t, "127.0.0.1"),
		Kubeconfig: kubeconfig, Upstream: c.publicDNS, Dir: filepath.Join(dir, "etc-coredns"),
	}
	if c.stock, err = e2e.LocalCorefile(src, env); err != nil {
		return nil, err
	}
	c.dns = env.Listen
	c.corefile = harness.WriteFile(t, dir, "Corefile", c.stock)
	c.stockPath = harness.WriteFile(t, dir, "Corefile.stock", c.stock)
	c.coredns = harness.StartProcess(t, "coredns", corednsBin, "-conf", c.corefile)
	if err := ready(ctx, c.coredns, harness.HTTPProbe("http://"+env.Ready+"/ready")); err != nil {
		return nil, err
	}
	if err := ready(ctx, c.coredns, harness.DNSProbe(c.dns, c.controllers[0].zone, dns.TypeSOA)); err != nil {
		return nil, err
	}
	return c, nil
}

// ready waits up to startTimeout for probe to pass against p.
func ready(ctx context.Context, p *harness.Process, probe harness.Probe) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := p.Ready(ctx, probe); err != nil {
		return fmt.Errorf("%s is not ready (log: %s): %w", p.Name, p.LogPath, err)
	}
	return nil
}

// corefileIsStock returns an error unless the Corefile CoreDNS reads is
// byte for byte the stock one.
func (c *cluster) corefileIsStock() error {
	b, err := os.ReadFile(c.corefile)
	if err != nil {
		return fmt.Errorf("read the Corefile: %w", err)
	}
	if string(b) != c.stock {
		return fmt.Errorf("%s is no longer the stock Corefile:\n%s", c.corefile, b)
	}
	return nil
}
