package hairpin

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	_ "github.com/coredns/coredns/plugin/hosts"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
)

func benchHost(i int) string { return fmt.Sprintf("host-%d.example.com", i) }

// hostsPlugin builds the stock hosts plugin with the same n names inline, the
// in-process limit that hairpin is compared against.
func hostsPlugin(b *testing.B, n int) plugin.Handler {
	b.Helper()
	var cfg strings.Builder
	cfg.WriteString("hosts /dev/null example.com {\n")
	for i := range n {
		fmt.Fprintf(&cfg, "127.77.0.10 %s\n", benchHost(i))
	}
	cfg.WriteString("fallthrough\n}\n")
	c := caddy.NewTestController("dns", cfg.String())
	setupHosts, err := caddy.DirectiveAction("dns", "hosts")
	if err != nil {
		b.Fatal(err)
	}
	if err := setupHosts(c); err != nil {
		b.Fatal(err)
	}
	plugins := dnsserver.GetConfig(c).Plugin
	return plugins[len(plugins)-1](test.NextHandler(dns.RcodeNameError, nil))
}

func hairpinPlugin(b *testing.B, n int) plugin.Handler {
	b.Helper()
	hosts := make([]string, n)
	for i := range n {
		hosts[i] = benchHost(i)
	}
	h := newTestHairpin(syncedCache(b, testZones, ips("127.77.0.10"), hosts...), testZones)
	h.Next = test.NextHandler(dns.RcodeNameError, nil)
	return h
}

// BenchmarkServeDNS compares hairpin with the hosts plugin on the same names,
// at 10 and 100,000 hosts, for a hit and a miss, in one run.
func BenchmarkServeDNS(b *testing.B) {
	for _, n := range []int{10, 100_000} {
		for _, impl := range []struct {
			name  string
			build func(*testing.B, int) plugin.Handler
		}{{"hairpin", hairpinPlugin}, {"hosts", hostsPlugin}} {
			h := impl.build(b, n)
			for _, q := range []struct{ kind, name string }{
				{"hit", benchHost(n/2) + "."},
				{"miss", "absent.example.com."},
			} {
				b.Run(fmt.Sprintf("%s/%s/hosts=%d", q.kind, impl.name, n), func(b *testing.B) {
					req := new(dns.Msg)
					req.SetQuestion(q.name, dns.TypeA)
					// Both must really answer a hit and pass a miss on, or
					// the comparison measures nothing.
					rec := dnstest.NewRecorder(&test.ResponseWriter{})
					h.ServeDNS(context.Background(), rec, req)
					if answered := rec.Msg != nil && len(rec.Msg.Answer) == 1; answered != (q.kind == "hit") {
						b.Fatalf("%s for %s: answered=%v", impl.name, q.name, answered)
					}
					w := &test.ResponseWriter{}
					ctx := context.Background()
					b.ReportAllocs()
					for b.Loop() {
						h.ServeDNS(ctx, w, req)
					}
				})
			}
		}
	}
}
