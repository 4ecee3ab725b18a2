package hairpin

import (
	"fmt"
	"testing"
	"time"

	"github.com/coredns/caddy"

	"github.com/miekg/dns"
)

// TestAnswersOverUDPAndTCPWithEDNS0 runs the plugin inside a real CoreDNS
// server on loopback and asks it over both transports.
func TestAnswersOverUDPAndTCPWithEDNS0(t *testing.T) {
	useFakeClients(t, targetService("hairpin-proxy", "127.77.0.10", "example.com", "*"), ingress("default", "app", "", "app.example.com"))
	port := freeLoopbackPort(t)
	startCorefile(t, fmt.Sprintf(`
example.com:%d {
    bind 127.0.0.1
    hairpin
}`, port))
	addr := fmt.Sprintf("127.0.0.1:%d", port)

	for _, tc := range []struct {
		net  string
		edns bool
	}{{"udp", false}, {"udp", true}, {"tcp", false}, {"tcp", true}} {
		t.Run(fmt.Sprintf("%s/edns0=%v", tc.net, tc.edns), func(t *testing.T) {
			m := new(dns.Msg)
			m.SetQuestion("App.Example.COM.", dns.TypeA)
			if tc.edns {
				m.SetEdns0(1232, false)
			}
			c := &dns.Client{Net: tc.net, Timeout: 2 * time.Second}
			r, _, err := c.Exchange(m, addr)
			if err != nil {
				t.Fatal(err)
			}
			if r.Rcode != dns.RcodeSuccess || !r.Authoritative || len(r.Answer) != 1 {
				t.Fatalf("got %v", r)
			}
			a, ok := r.Answer[0].(*dns.A)
			if !ok || a.A.String() != "127.77.0.10" || a.Hdr.Name != "App.Example.COM." {
				t.Errorf("answer %v, want App.Example.COM. A 127.77.0.10", r.Answer[0])
			}
			if hasOPT := r.IsEdns0() != nil; hasOPT != tc.edns {
				t.Errorf("OPT in reply = %v, want %v", hasOPT, tc.edns)
			}
		})
	}
}

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
