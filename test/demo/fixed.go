package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// fixed is step 3: each host resolves to its own target's ClusterIP, and
// the request reaches its own controller, with the client's real address,
// and no other.
func (st *story) fixed(ctx context.Context, t testing.TB) error {
	c := st.c
	st.header("3. Fixed, per controller: each host goes to its own target and its own controller")
	for _, ctl := range c.controllers {
		took, err := st.waitAnswer(ctx, ctl.host, ctl.target)
		if err != nil {
			return err
		}
		st.note(fmt.Sprintf("%s (Ingress class %s): the ClusterIP of target %s/%s%s", ctl.host, ctl.class, namespace, ctl.class, cacheNote(took)))
		if err := st.digWant(ctx, c.dns, ctl.host, ctl.target, "its own target"); err != nil {
			return err
		}
		client := harness.FreeLoopbackIP(t)
		st.note(fmt.Sprintf("The pod is %s (curl --interface), so that we can find it in the controllers' logs.", client))
		res, err := st.curl(ctx, e2e.CurlRequest{Scheme: "https", Host: ctl.host, IP: ctl.target, Port: 443, CACert: ctl.nginx.Cert.CertFile, Source: client})
		if err != nil {
			return err
		}
		if res.ExitCode != 0 || res.Status != "200" {
			return fmt.Errorf("curl %s through the proxy: status %s, exit %d: %s", ctl.host, res.Status, res.ExitCode, res.Stderr)
		}
		wait, cancel := context.WithTimeout(ctx, 5*time.Second)
		e, err := ctl.nginx.WaitAccessLog(wait, func(e harness.AccessLogEntry) bool { return e.Host == ctl.host && e.RemoteAddr == client.String() })
		cancel()
		if err != nil {
			return fmt.Errorf("controller %s: %w", ctl.class, err)
		}
		line, err := accessLogLine(ctl.nginx.AccessLogPath, client.String())
		if err != nil {
			return err
		}
		st.cmd("grep %s %s", client, ctl.nginx.AccessLogPath)
		st.block(line)
		st.linef("  remote_addr                 %-16s <- the pod's own address, from the PROXY header", e.RemoteAddr)
		st.linef("  realip_remote_addr          %-16s <- the TCP peer the controller saw: the proxy", e.RealIPRemoteAddr)
		st.linef("  proxy_protocol_server_addr  %-16s <- the target ClusterIP the pod dialled", e.ProxyProtocolServerAddr)
		st.linef("  proxy_protocol_server_port  %-16s <- the Service port, as a load balancer reports it", e.ProxyProtocolServerPort)
		st.linef("  ssl_server_name             %-16s <- SNI passed through untouched", e.SSLServerName)
		if e.ProxyProtocolServerAddr != ctl.target.String() || e.ProxyProtocolServerPort != "443" || e.SSLServerName != ctl.host || e.Status != "200" {
			return fmt.Errorf("controller %s logged %+v; want the PROXY destination %s:443, SNI %s and status 200", ctl.class, e, ctl.target, ctl.host)
		}
		for _, other := range c.controllers {
			if other == ctl {
				continue
			}
			entries, err := other.nginx.AccessLog()
			if err != nil {
				return err
			}
			n := 0
			for _, e := range entries {
				if e.RemoteAddr == client.String() || e.ProxyProtocolAddr == client.String() || e.Host == ctl.host {
					n++
				}
			}
			st.cmd("grep -c -e %s -e %s %s", client, ctl.host, other.nginx.AccessLogPath)
			st.block(fmt.Sprint(n))
			if n != 0 {
				return fmt.Errorf("controller %s also logged the request of %s for %s (%s)", other.class, client, ctl.host, other.nginx.AccessLogPath)
			}
		}
		st.linef("")
	}
	return nil
}

// cacheNote says why an answer took a while: the stock Corefile's cache.
func cacheNote(took time.Duration) string {
	if took < 500*time.Millisecond {
		return ""
	}
	return fmt.Sprintf(" (after %s: `cache 30` kept the earlier answer for its TTL)", took.Round(100*time.Millisecond))
}

// answers digs every controller's host at the cluster DNS and fails unless
// each is its target's ClusterIP, or with public its load balancer's IP.
func (st *story) answers(ctx context.Context, public bool, what string) error {
	for _, ctl := range st.c.controllers {
		want := ctl.target
		if public {
			want = ctl.lb
		}
		if err := st.digWant(ctx, st.c.dns, ctl.host, want, what); err != nil {
			return err
		}
	}
	return nil
}
