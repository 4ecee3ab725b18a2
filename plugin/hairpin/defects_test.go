package hairpin

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns/caddy"
	_ "github.com/coredns/coredns/plugin/template"

	"github.com/miekg/dns"
	networking "k8s.io/api/networking/v1"
)

// startCorefile starts a real CoreDNS instance on loopback and stops it when
// the test ends.
func startCorefile(t *testing.T, corefile string) *caddy.Instance {
	t.Helper()
	inst, err := caddy.Start(caddy.CaddyfileInput{ServerTypeName: "dns", Contents: []byte(corefile)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		inst.Stop()
		inst.ShutdownCallbacks()
	})
	return inst
}

// exchange asks addr over UDP and fails the test on a timeout: a reply that
// cannot be packed never reaches the client.
func exchange(t *testing.T, addr, qname string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(qname, qtype)
	c := &dns.Client{Net: "udp", Timeout: time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s: %v", qname, dns.TypeToString[qtype], err)
	}
	return r
}

func TestRootZoneNoDataReachesTheClient(t *testing.T) {
	useFakeClients(t, ingress("default", "app", "", "app.example.com"))
	port := freeLoopbackPort(t)
	startCorefile(t, fmt.Sprintf(`.:%d {
    bind 127.0.0.1
    hairpin . {
        proxy_ip 127.77.0.10
    }
}`, port))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for _, qtype := range []uint16{dns.TypeAAAA, dns.TypeHTTPS, dns.TypeSVCB} {
		t.Run(dns.TypeToString[qtype], func(t *testing.T) {
			r := exchange(t, addr, "app.example.com.", qtype)
			if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 {
				t.Fatalf("want NODATA with one SOA, got %v", r)
			}
			soa, ok := r.Ns[0].(*dns.SOA)
			if !ok || soa.Hdr.Name != "." || strings.Contains(soa.Ns, "..") || strings.Contains(soa.Mbox, "..") {
				t.Fatalf("authority %v, want a well-formed SOA for the root zone", r.Ns[0])
			}
		})
	}
}

func TestWildcardCertificateIsNotARoute(t *testing.T) {
	ing := ingress("default", "app", "", "app.example.com")
	ing.Spec.TLS = []networking.IngressTLS{{Hosts: []string{"*.example.com", "tls-only.example.com"}, SecretName: "wildcard"}}
	useFakeClients(t, ing)
	port := freeLoopbackPort(t)
	startCorefile(t, fmt.Sprintf(`example.com:%d {
    bind 127.0.0.1
    hairpin {
        proxy_ip 127.77.0.10
    }
}`, port))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if r := exchange(t, addr, "app.example.com.", dns.TypeA); len(r.Answer) != 1 {
		t.Fatalf("the rule's host is not answered: %v", r)
	}
	for _, name := range []string{"mail.example.com.", "vpn.example.com.", "tls-only.example.com."} {
		r := exchange(t, addr, name, dns.TypeA)
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok && a.A.Equal(net.ParseIP("127.77.0.10")) {
				t.Errorf("%s was sent to the proxy by a TLS entry that no rule serves", name)
			}
		}
	}
}

func TestRootBlockExplicitProxyMustNameZones(t *testing.T) {
	for _, stanza := range []string{
		"hairpin {\n proxy hairpin-system/hairpin-proxy\n}",
		"hairpin {\n proxy_ip 127.77.0.10\n}",
	} {
		c := caddy.NewTestController("dns", stanza)
		c.ServerBlockKeys = []string{".:53"}
		_, err := parse(c)
		if err == nil || !strings.Contains(err.Error(), "zones") {
			t.Errorf("%q in a root block: err = %v, want a refusal that names the zones", stanza, err)
		}
	}
}

func TestFailedReloadReleasesItsCache(t *testing.T) {
	useFakeClients(t, ingress("default", "app", "", "app.example.com"))
	port := freeLoopbackPort(t)
	busy, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.LocalAddr().(*net.UDPAddr).Port
	block := func(zone string, port int) string {
		return fmt.Sprintf("%s:%d {\n bind 127.0.0.1\n hairpin {\n  proxy_ip 127.77.0.10\n }\n}\n", zone, port)
	}
	inst := startCorefile(t, block("example.com", port))
	if n := len(sharedCaches()); n != 1 {
		t.Fatalf("%d caches after start, want 1", n)
	}
	// The new instance's settings differ (another zone), so it builds a
	// cache of its own; its second server cannot bind, so caddy discards it.
	next := caddy.CaddyfileInput{ServerTypeName: "dns", Contents: []byte(block("example.org", port) + block("example.net", busyPort))}
	if _, err := inst.Restart(next); err == nil {
		t.Fatal("reload onto a busy port succeeded")
	}
	if n := len(sharedCaches()); n != 1 {
		t.Fatalf("%d caches after the failed reload, want 1: the discarded instance's cache leaked", n)
	}
}

func TestUnreachableAPIServerDoesNotHoldStartupOrDNS(t *testing.T) {
	// An apiserver that accepts TCP and never answers.
	stall, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stall.Close()
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := stall.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	kubeconfig := writeKubeconfig(t, "http://"+stall.Addr().String())
	registerDirective(t)

	port := freeLoopbackPort(t)
	started := make(chan *dns.Msg, 1)
	go func() {
		inst := startCorefile(t, fmt.Sprintf(`example.com:%d {
    bind 127.0.0.1
    hairpin {
        proxy_ip 127.77.0.10
        gateway_class *
        kubeconfig %s
        startup_timeout 500ms
    }
    template IN A other.example.com {
        answer "{{ .Name }} 60 IN A 192.0.2.1"
    }
}`, port, kubeconfig))
		_ = inst
		started <- exchange(t, fmt.Sprintf("127.0.0.1:%d", port), "other.example.com.", dns.TypeA)
	}()
	select {
	case r := <-started:
		if len(r.Answer) != 1 {
			t.Fatalf("other names are not answered while the apiserver stalls: %v", r)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("CoreDNS did not start serving within startup_timeout (plus slack) while the apiserver stalls")
	}
}

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := t.TempDir() + "/kubeconfig"
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
