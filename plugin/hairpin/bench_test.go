package hairpin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	_ "github.com/coredns/coredns/plugin/hosts"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/labels"
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

// targetsCache builds a serving discovery cache the way the watches do: nt
// targets, each selecting its own class and zone, and Ingresses of two hosts
// each, spread evenly over them, fed through the Ingress store (selection and
// zone checks included) and published. It returns the hosts in creation
// order.
func targetsCache(b *testing.B, nt, ingresses int) (*hostCache, []string) {
	b.Helper()
	hc := newHostCache(nil, settings{zones: []string{"."}, targetsNamespace: defaultTargetsNamespace, labels: labels.Everything()})
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for t := range nt {
		tgt := newTarget(rules.Target{Name: fmt.Sprintf("%s/tenant-%03d", defaultTargetsNamespace, t), Spec: rules.TargetSpec{
			Zones: []string{fmt.Sprintf("tenant-%03d.example.com.", t)}, IngressClasses: []string{fmt.Sprintf("tenant-%03d", t)},
		}})
		tgt.store(splitFamilies(ips(fmt.Sprintf("127.77.%d.%d", 1+t/250, 1+t%250))))
		hc.targets[tgt.Name] = tgt
	}
	hosts := make([]string, 0, 2*ingresses)
	now := time.Now()
	for i := range ingresses {
		t := i % nt
		ing := &ingressEntry{
			owner: owner{ownerRef: ownerRef{kind: rules.KindIngress, key: fmt.Sprintf("tenant-%03d/app-%06d", t, i)}},
			class: fmt.Sprintf("tenant-%03d", t),
			hosts: []string{fmt.Sprintf("app-%06d.tenant-%03d.example.com.", i, t), fmt.Sprintf("api-%06d.tenant-%03d.example.com.", i, t)},
		}
		hc.ingresses.upsertLocked(ing, now)
		hosts = append(hosts, ing.hosts...)
	}
	hc.publishLocked()
	if exact, _ := hc.index().size(); exact != len(hosts) {
		b.Fatalf("index has %d hosts, want %d", exact, len(hosts))
	}
	hc.open.Store(true)
	return hc, hosts
}

// BenchmarkServeDNSTargets is the hit path of the multi-target index at the
// scale of issue 11 (100,000 Ingresses of 2 hosts over 100 targets) against
// the 10-host, 1-target case, and against the same 200,000 hosts on one
// target, which isolates what many targets cost from what a large index
// costs. "repeat" asks one name, the cost of the code path; "spread" walks
// every host in a shuffled order, so the large cases also pay for a map that
// does not fit in the CPU caches, as a real server does. The names are laid
// out contiguously in query order, so that reading them costs the same at
// every size and only the index differs.
func BenchmarkServeDNSTargets(b *testing.B) {
	for _, size := range []struct{ targets, ingresses int }{{1, 5}, {100, 100_000}, {1, 100_000}} {
		hc, hosts := targetsCache(b, size.targets, size.ingresses)
		h := newTestHairpin(hc, []string{"."})
		rand.New(rand.NewPCG(1, 2)).Shuffle(len(hosts), func(i, j int) { hosts[i], hosts[j] = hosts[j], hosts[i] })
		names := contiguous(hosts)
		for _, mode := range []string{"repeat", "spread"} {
			b.Run(fmt.Sprintf("hit/%s/targets=%d/hosts=%d", mode, size.targets, len(hosts)), func(b *testing.B) {
				req := new(dns.Msg)
				req.SetQuestion(names[0], dns.TypeA)
				// Every name must really be answered, with its own target.
				for _, name := range names {
					req.Question[0].Name = name
					rec := dnstest.NewRecorder(&test.ResponseWriter{})
					h.ServeDNS(context.Background(), rec, req)
					if rec.Msg == nil || len(rec.Msg.Answer) != 1 {
						b.Fatalf("%s was not answered: %v", name, rec.Msg)
					}
				}
				req.Question[0].Name = names[len(names)/2]
				w := &test.ResponseWriter{}
				ctx := context.Background()
				b.ReportAllocs()
				i := 0
				cpu0 := cpuTime()
				for b.Loop() {
					if mode == "spread" {
						req.Question[0].Name = names[i]
						if i++; i == len(names) {
							i = 0
						}
					}
					h.ServeDNS(ctx, w, req)
				}
				// On a shared machine ns/op counts the time the benchmark
				// waited for a core; CPU time per op does not.
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// contiguous copies names into one buffer, in order, and returns them as
// slices of it.
func contiguous(names []string) []string {
	var buf strings.Builder
	for _, n := range names {
		buf.WriteString(n)
	}
	all := buf.String()
	out := make([]string, len(names))
	off := 0
	for i, n := range names {
		out[i] = all[off : off+len(n)]
		off += len(n)
	}
	return out
}

// BenchmarkPublishOneChange is the write side's cost per change at the
// scale of issue 23 (100,000 owners of 2 hosts over 100 targets): one owner
// renames a host, and the index is published. B/op is the garbage each
// change leaves, which is what makes the collector run under a steady
// stream of changes.
func BenchmarkPublishOneChange(b *testing.B) {
	const owners, targets = 100_000, 100
	ts := make([]*target, targets)
	for i := range ts {
		ts[i] = newTarget(rules.Target{Name: fmt.Sprintf("ns/t%03d", i)})
	}
	c := newClaims()
	owns := make([]*owner, owners)
	for i := range owns {
		owns[i] = ingressOwnerOf(fmt.Sprintf("tenant-%03d/app-%06d", i%targets, i))
		zone := fmt.Sprintf("tenant-%03d.example.com.", i%targets)
		c.set(owns[i], ownerClaims{hosts: []string{fmt.Sprintf("app-%06d.%s", i, zone), fmt.Sprintf("api-%06d.%s", i, zone)}, target: ts[i%targets]})
	}
	c.publish()
	b.ReportAllocs()
	j := 0
	for b.Loop() {
		i := (j * 7919) % owners
		zone := fmt.Sprintf("tenant-%03d.example.com.", i%targets)
		c.set(owns[i], ownerClaims{hosts: []string{fmt.Sprintf("app-%06d-v%d.%s", i, j, zone), fmt.Sprintf("api-%06d.%s", i, zone)}, target: ts[i%targets]})
		if _, changed, _ := c.publish(); !changed {
			b.Fatal("a rename published no change")
		}
		j++
	}
}
