package hairpin

import (
	"context"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
)

// The fuzz targets cover what parses untrusted input: Corefile stanzas and
// DNS messages from any client (the hostnames and annotations of tenants'
// objects are fuzzed in package rules). `go test` runs the seeds; `make fuzz` runs each for FUZZTIME.

func FuzzParseStanza(f *testing.F) {
	for _, seed := range []string{
		"hairpin",
		"hairpin example.com {\nproxy ns/name\ningress_class nginx *\n}",
		"hairpin {\ntargets hairpin-system\nttl 30\nstartup_timeout 1s\n}",
		"hairpin {\nproxy_ip 127.0.0.1 ::1\nlabels a in (b,c)\n}",
		"hairpin {\nkubeconfig \"/x y\" ctx\nnamespaces a b\n}",
		"hairpin {\n}\nhairpin",
	} {
		f.Add(seed, ".:53")
		f.Add(seed, "example.com:53")
	}
	f.Fuzz(func(t *testing.T, stanza, key string) {
		c := caddy.NewTestController("dns", stanza)
		c.ServerBlockKeys = []string{key}
		s, err := parse(c)
		if err != nil {
			return
		}
		// A stanza that parses is internally consistent.
		if s.explicit() && s.targetsNamespace != "" {
			t.Fatalf("%q: explicit proxy and target discovery at once", stanza)
		}
		if !s.explicit() && (len(s.ingressClasses) > 0 || len(s.gatewayClasses) > 0) {
			t.Fatalf("%q: class filters without an explicit proxy", stanza)
		}
		_ = s.cacheKey()
	})
}

func FuzzIndexLookup(f *testing.F) {
	hc := syncedCache(f, []string{"example.com."}, ips("127.77.0.10"), "app.example.com", "*.w.example.com")
	ix := hc.index()
	for _, seed := range []string{"app.example.com.", "x.w.example.com.", "w.example.com.", ".", "", "..", "a.", "*.w.example.com."} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, qname string) {
		got := ix.lookup(qname)
		if got == nil {
			return
		}
		if !strings.HasSuffix(qname, "example.com.") {
			t.Fatalf("%q matched outside the served hosts", qname)
		}
	})
}

func FuzzServeDNS(f *testing.F) {
	zones := []string{"."}
	h := newTestHairpin(syncedCache(f, zones, ips("127.77.0.10", "fd00::10"), "app.example.com", "*.w.example.com"), zones)
	for _, q := range []test.Case{
		{Qname: "app.example.com.", Qtype: dns.TypeA},
		{Qname: "APP.example.com.", Qtype: dns.TypeAAAA},
		{Qname: "x.w.example.com.", Qtype: dns.TypeHTTPS},
		{Qname: "other.example.com.", Qtype: dns.TypeMX},
	} {
		m := q.Msg()
		m.SetEdns0(1232, true)
		buf, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(buf)
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		r := new(dns.Msg)
		if err := r.Unpack(wire); err != nil || len(r.Question) != 1 {
			return
		}
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		if _, err := h.ServeDNS(context.Background(), rec, r); err != nil {
			t.Fatalf("ServeDNS: %v", err)
		}
		if rec.Msg == nil {
			t.Fatal("no reply written")
		}
		// Whatever the plugin builds must pack, or the client gets nothing.
		if _, err := rec.Msg.Pack(); err != nil {
			t.Fatalf("reply does not pack: %v\n%v", err, rec.Msg)
		}
	})
}
