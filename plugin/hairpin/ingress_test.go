package hairpin

import (
	"fmt"
	"net"
	"testing"

	"github.com/miekg/dns"
	networking "k8s.io/api/networking/v1"
)

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
