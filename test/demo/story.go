package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// story prints the demo for a person: numbered sections, the commands as one
// would type them, and their real output.
type story struct {
	w    io.Writer
	keep bool   // DEMO_KEEP=1
	root string // the demo's working folder
	kept bool   // the story finished and the stack is being kept
}

const host = "app.example.com"

func (st *story) run(ctx context.Context, tb *demoTB) error {
	// Fail before the slow part when a binary is missing.
	harness.RequireBinary(tb, "coredns")
	harness.RequireBinary(tb, "hairpin-proxy")
	harness.RequireAssets(tb)

	st.header("Starting the stack (real binaries, all on loopback)")
	start := time.Now()
	cp, err := harness.StartControlPlane(harness.ControlPlaneOptions{
		Dir:        filepath.Join(st.root, "controlplane"),
		GatewayAPI: harness.GatewayStandard,
	})
	if err != nil {
		return fmt.Errorf("start the control plane: %w", err)
	}
	// Registered first, so it runs last: after CoreDNS has closed its watches.
	tb.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintf(st.w, "stop the control plane: %v\n", err)
		}
	})
	st.linef("kube-apiserver + etcd   %s  (up in %s)", cp.Config.Host, time.Since(start).Round(100*time.Millisecond))
	if err := ctx.Err(); err != nil {
		return err
	}
	s := e2e.StartStack(ctx, tb, cp)
	st.linef("ingress-nginx stand-in  %s:%d and :%d  (\"LoadBalancer IP\"; every listener requires a PROXY header)", s.LoadBalancerIP, s.HTTPPort, s.HTTPSPort)
	st.linef("public DNS stand-in     %s  (*.example.com -> %s)", s.PublicDNS, s.LoadBalancerIP)
	st.linef("hairpin-proxy           %s:80 and :443  (ClusterIP of Service %s/%s)", s.ProxyIP, e2e.ProxyNamespace, e2e.ProxyService)
	st.linef("CoreDNS, stock Corefile %s", s.StockDNS)
	st.linef("CoreDNS, with hairpin   %s", s.HairpinDNS)
	st.linef("")
	st.linef("Both CoreDNS servers run kube-system's stock Corefile; the second one adds this stanza:")
	st.block(hairpinStanza(s.HairpinCorefile))

	// 1. Without hairpin.
	st.header("1. Without hairpin: nginx refuses the in-cluster request")
	lb, err := st.dig(ctx, s.StockDNS, host)
	if err != nil {
		return err
	}
	st.note("The public answer: the load balancer's IP. In a cluster, kube-proxy or Cilium sends that")
	st.note("straight to ingress-nginx, past the load balancer that would have added the PROXY header.")
	res, err := st.curl(ctx, e2e.CurlRequest{Scheme: "https", Host: host, IP: lb, Port: s.HTTPSPort, CACert: s.Nginx.Cert.CertFile})
	if err != nil {
		return err
	}
	if res.ExitCode == 0 {
		return fmt.Errorf("curl to the load balancer IP succeeded (status %s); nginx should have refused it", res.Status)
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.Nginx.WaitErrorLog(wait, "broken header"); err != nil {
		return err
	}
	st.linef("nginx's error log (%s):", s.Nginx.ErrorLogPath)
	st.block(brokenHeaderLine(s.Nginx.ErrorLog()))
	st.note("nginx expected \"PROXY TCP4 <client> <server> <port> <port>\" first and got curl's TLS ClientHello.")

	// 2. With hairpin: the DNS answer.
	st.header("2. With hairpin: the name resolves to the proxy")
	st.note("An Ingress for the host, as with:")
	st.note(fmt.Sprintf("  kubectl create namespace app; kubectl create ingress app -n app --class nginx --rule '%s/*=app:80'", host))
	created := time.Now()
	if _, err := e2e.CreateIngress(ctx, cp, "app", "app", host); err != nil {
		return err
	}
	// Wait on the hairpin CoreDNS's cache-free block: a query to the cached
	// block before the watch event arrives would pin the public answer there
	// for 5 s.
	served, err := waitServed(ctx, s.UncachedDNS, s.ProxyIP)
	if err != nil {
		return err
	}
	st.note(fmt.Sprintf("CoreDNS served the new host %s after the Ingress was created: no Corefile edit, no reload.", served.Sub(created).Round(10*time.Microsecond)))
	st.linef("")
	st.linef("Before (stock Corefile):")
	if _, err := st.dig(ctx, s.StockDNS, host); err != nil {
		return err
	}
	st.linef("After (with the hairpin stanza):")
	ip, err := st.dig(ctx, s.HairpinDNS, host)
	if err != nil {
		return err
	}
	if ip != s.ProxyIP {
		return fmt.Errorf("hairpin CoreDNS answered %s, want the proxy ClusterIP %s", ip, s.ProxyIP)
	}
	st.note(fmt.Sprintf("%s is the ClusterIP of %s/%s.", ip, e2e.ProxyNamespace, e2e.ProxyService))

	// 3. The working request.
	st.header("3. The same request through the proxy works (HTTPS, SNI intact)")
	client := harness.FreeLoopbackIP(tb)
	st.note(fmt.Sprintf("curl connects from %s (--interface), so that we can recognise it in nginx's log.", client))
	res, err = st.curl(ctx, e2e.CurlRequest{Scheme: "https", Host: host, IP: ip, Port: 443, CACert: s.Nginx.Cert.CertFile, Source: client})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 || res.Status != "200" {
		return fmt.Errorf("curl through the proxy: status %s, exit %d: %s", res.Status, res.ExitCode, res.Stderr)
	}

	// 4. The access log.
	st.header("4. nginx saw the real client and the port it dialled")
	wait, cancel = context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	e, err := s.Nginx.WaitAccessLog(wait, func(e harness.AccessLogEntry) bool { return e.RemoteAddr == client.String() })
	if err != nil {
		return err
	}
	line, err := accessLogLine(s.Nginx.AccessLogPath, client.String())
	if err != nil {
		return err
	}
	st.linef("nginx's access log (%s):", s.Nginx.AccessLogPath)
	st.block(line)
	st.linef("  remote_addr                 %-16s <- curl's own address, from the PROXY header", e.RemoteAddr)
	st.linef("  realip_remote_addr          %-16s <- the TCP peer nginx saw: the proxy", e.RealIPRemoteAddr)
	st.linef("  proxy_protocol_server_addr  %-16s <- the ClusterIP curl dialled", e.ProxyProtocolServerAddr)
	st.linef("  proxy_protocol_server_port  %-16s <- the Service port, as a load balancer would report it", e.ProxyProtocolServerPort)
	st.linef("  ssl_server_name             %-16s <- SNI passed through untouched", e.SSLServerName)
	st.linef("  status                      %s", e.Status)

	if st.keep {
		st.kept = true
		st.keepRunning(ctx, cp, s)
	}
	return nil
}

// keepRunning prints how to play with the stack and waits for Ctrl-C.
func (st *story) keepRunning(ctx context.Context, cp *harness.ControlPlane, s *e2e.Stack) {
	dnsHost, dnsPort := splitHostPort(s.HairpinDNS)
	st.header("The stack keeps running (DEMO_KEEP=1); Ctrl-C stops it")
	st.linef("kubeconfig          %s", cp.Kubeconfig)
	st.linef("CoreDNS (hairpin)   %s port %s", dnsHost, dnsPort)
	st.linef("CoreDNS (stock)     %s", s.StockDNS)
	st.linef("proxy ClusterIP     %s (ports 80, 443); metrics at http://%s/metrics", s.ProxyIP, s.ProxyHealth)
	st.linef("nginx logs          %s, %s", s.Nginx.AccessLogPath, s.Nginx.ErrorLogPath)
	st.linef("")
	st.linef("Try:")
	st.linef("  kubectl --kubeconfig %s create ingress demo --class nginx --rule 'demo.example.com/*=app:80'", cp.Kubeconfig)
	st.linef("  dig @%s -p %s demo.example.com +short", dnsHost, dnsPort)
	st.linef("  curl --resolve demo.example.com:443:%s --cacert %s https://demo.example.com/", s.ProxyIP, s.Nginx.Cert.CertFile)
	st.linef("  kubectl --kubeconfig %s delete ingress demo", cp.Kubeconfig)
	st.linef("(CoreDNS caches every answer for at least 5 s: a name dug before its Ingress exists keeps")
	st.linef("the public answer that long.)")
	<-ctx.Done()
}

func (st *story) header(title string) {
	fmt.Fprintf(st.w, "\n=== %s ===\n\n", title)
}

func (st *story) linef(format string, args ...any) {
	fmt.Fprintf(st.w, format+"\n", args...)
}

func (st *story) note(text string) {
	fmt.Fprintf(st.w, "# %s\n", text)
}

func (st *story) block(text string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(st.w, "    %s\n", l)
	}
}

// dig resolves name at server with dig +short, prints the exchange and
// returns the single address of the answer.
func (st *story) dig(ctx context.Context, server, name string) (netip.Addr, error) {
	h, p := splitHostPort(server)
	st.linef("$ dig @%s -p %s %s +short", h, p, name)
	out, err := e2e.Dig(ctx, server, name, "A", "+short")
	if err != nil {
		return netip.Addr{}, err
	}
	st.block(out)
	addrs := e2e.ParseDigShort(out)
	if len(addrs) != 1 {
		return netip.Addr{}, fmt.Errorf("dig %s at %s: want one address, got %q", name, server, out)
	}
	return addrs[0], nil
}

// curl runs r, prints the command and what curl printed.
func (st *story) curl(ctx context.Context, r e2e.CurlRequest) (e2e.CurlResult, error) {
	st.linef("$ curl %s", shellJoin(r.Args()))
	res, err := e2e.Curl(ctx, r)
	if err != nil {
		return res, err
	}
	if res.Stderr != "" {
		st.block(res.Stderr)
	}
	st.block(fmt.Sprintf("HTTP status: %s   (curl exit code %d)", res.Status, res.ExitCode))
	return res, nil
}
