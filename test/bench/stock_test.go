package bench

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// stockServer is a CoreDNS binary running kubeadm's stock Corefile
// (test/e2e/testdata/corefiles, pointed at loopback by e2e.LocalCorefile):
// the Corefile of the activation and the plugin-order benchmarks.
type stockServer struct {
	name, addr, ip string
	port           int
	proc           *harness.Process
}

// publicUpstream starts the forward upstream stand-in (also what the loop
// plugin probes): example.com, every name on one address.
func publicUpstream(ctx context.Context, t *testing.T, coredns, dir string) (string, *harness.Process) {
	t.Helper()
	public := harness.FreeAddr(t, "127.0.0.1")
	zone := harness.WriteFile(t, dir, "example.com.zone", e2e.PublicZone(harness.FreeLoopbackIP(t)))
	pub := harness.StartProcess(t, "public-dns", coredns, "-conf", harness.WriteFile(t, dir, "Corefile.public", e2e.PublicCorefile(public, e2e.ZoneFile{Zone: e2e.Zone, Path: zone})))
	if err := pub.Ready(ctx, harness.DNSProbe(public, e2e.Zone, dns.TypeSOA)); err != nil {
		t.Fatal(err)
	}
	return public, pub
}

// startStock runs bin with kubeadm's Corefile, forwarding to public, and
// waits until it is ready and answers a Service name.
func startStock(ctx context.Context, t *testing.T, k *kube, bin, name, public, dir string, args ...string) *stockServer {
	t.Helper()
	src, err := e2e.DistributionCorefile("kubeadm")
	if err != nil {
		t.Fatal(err)
	}
	ip := harness.FreeLoopbackIP(t).String()
	s := &stockServer{name: name, ip: ip, port: harness.FreePort(t, ip)}
	s.addr = fmt.Sprintf("%s:%d", ip, s.port)
	ready := harness.FreeAddr(t, "127.0.0.1")
	corefile, err := e2e.LocalCorefile(src, e2e.LocalEnv{
		Listen: s.addr, Health: harness.FreeAddr(t, "127.0.0.1"), Ready: ready, Metrics: harness.FreeAddr(t, "127.0.0.1"),
		Kubeconfig: k.cp.Kubeconfig, Upstream: public, Dir: dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	path := harness.WriteFile(t, dir, "Corefile."+name, corefile)
	s.proc = harness.StartCmd(t, "coredns-"+name, exec.Command(bin, append([]string{"-conf", path}, args...)...))
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := s.proc.Ready(wctx, harness.HTTPProbe("http://"+ready+"/ready")); err != nil {
		t.Fatal(err)
	}
	if err := s.proc.Ready(wctx, harness.DNSProbe(s.addr, "kubernetes.default.svc.cluster.local.", dns.TypeA)); err != nil {
		t.Fatal(err)
	}
	return s
}

// sameAnswers fails t unless a and b give the same rcode and number of
// answers for every name.
func sameAnswers(ctx context.Context, t *testing.T, a, b *stockServer, names []string) {
	t.Helper()
	for _, n := range names {
		ra, err := harness.Exchange(ctx, a.addr, dns.Fqdn(n), dns.TypeA)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := harness.Exchange(ctx, b.addr, dns.Fqdn(n), dns.TypeA)
		if err != nil {
			t.Fatal(err)
		}
		if ra.Rcode != rb.Rcode || len(ra.Answer) != len(rb.Answer) {
			t.Fatalf("%s: %s answers %s/%d, %s %s/%d: the two must not differ in their answers",
				n, a.name, dns.RcodeToString[ra.Rcode], len(ra.Answer), b.name, dns.RcodeToString[rb.Rcode], len(rb.Answer))
		}
	}
}

// interleavedQPS warms both servers up, then runs dnsperf with the query
// file qf against a and b in turn, reps times, in balancedOrders' orders
// (a, b; b, a; ...) so that neither always runs on a machine warmed (or
// loaded) by the other. It returns each server's QPS per run, by name.
func interleavedQPS(ctx context.Context, t *testing.T, cfg config, a, b *stockServer, qf, dir string, reps int) map[string][]float64 {
	t.Helper()
	for _, s := range []*stockServer{a, b} {
		if _, err := runDNSPerf(ctx, s.ip, s.port, qf, time.Second, dir, s.name+"-warmup"); err != nil {
			t.Fatalf("%s warm-up: %v", s.name, err)
		}
	}
	qps := map[string][]float64{}
	servers := []*stockServer{a, b}
	orders := balancedOrders(len(servers))
	for rep := range reps {
		for _, i := range orders[rep%len(orders)] {
			s := servers[i]
			r, err := runDNSPerf(ctx, s.ip, s.port, qf, cfg.dnsDur, dir, fmt.Sprintf("%s-%d", s.name, rep))
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			if r.Lost*100 > r.Sent {
				t.Fatalf("%s: %d of %d queries lost", s.name, r.Lost, r.Sent)
			}
			t.Logf("bench: dns %-14s rep %d: %8.0f qps, avg %6.0f us, p99 %6.0f us, rcodes %v, load %s", s.name, rep, r.QPS, r.AvgUS, r.P99US, r.Rcodes, loadAvg())
			qps[s.name] = append(qps[s.name], r.QPS)
		}
	}
	return qps
}
