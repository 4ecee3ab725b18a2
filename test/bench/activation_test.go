package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// activationTarget is the bar: with image-only activation on a stock
// Corefile and no target, QPS stays within 0.98× of activation off.
const activationTarget = 0.98

// benchActivation measures what image-only activation costs a cluster that
// has no target: kubeadm's stock Corefile (test/e2e/testdata/corefiles,
// pointed at loopback by e2e.LocalCorefile) in our image with activation on
// (hairpin added, inert) and off (-hairpin.activate=false), side by side,
// interleaved, the same dnsperf load.
//
// The load is what a cluster's CoreDNS mostly sees: cluster.local names, a
// quarter existing Services and three quarters the search-path expansions
// of an external name (ndots:5), which are NXDOMAIN. kubeadm's Corefile
// disables caching for cluster.local (`disable success/denial`), so every
// query passes the hairpin handler, before the kubernetes plugin answers.
func benchActivation(t *testing.T, cfg config, bin map[string]string, k *kube, res *Results) {
	ctx := t.Context()
	dir := t.TempDir()

	// The forward upstream stand-in (also what the loop plugin probes).
	public := harness.FreeAddr(t, "127.0.0.1")
	zone := harness.WriteFile(t, dir, "example.com.zone", e2e.PublicZone(harness.FreeLoopbackIP(t)))
	pub := harness.StartProcess(t, "public-dns", bin["coredns"], "-conf", harness.WriteFile(t, dir, "Corefile.public", e2e.PublicCorefile(public, e2e.ZoneFile{Zone: e2e.Zone, Path: zone})))
	if err := pub.Ready(ctx, harness.DNSProbe(public, e2e.Zone, dns.TypeSOA)); err != nil {
		t.Fatal(err)
	}

	src, err := e2e.DistributionCorefile("kubeadm")
	if err != nil {
		t.Fatal(err)
	}
	type server struct {
		name, addr, ip string
		port           int
		proc           *harness.Process
	}
	start := func(name string, args ...string) *server {
		ip := harness.FreeLoopbackIP(t).String()
		s := &server{name: name, ip: ip, port: harness.FreePort(t, ip)}
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
		s.proc = harness.StartCmd(t, "coredns-"+name, exec.Command(bin["coredns"], append([]string{"-conf", path}, args...)...))
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
	on := start("activation-on")
	off := start("activation-off", "-hairpin.activate=false")
	if !strings.Contains(on.proc.Output(), "plugin/hairpin: activated in server block") {
		t.Fatalf("activation-on did not activate hairpin:\n%s", on.proc.Output())
	}
	if !strings.Contains(off.proc.Output(), "plugin/hairpin: activation is off") {
		t.Fatalf("activation-off did not turn activation off:\n%s", off.proc.Output())
	}

	// The query mix; both servers must give the same answers to it.
	names := []string{"kubernetes.default.svc.cluster.local", proxyName + "." + proxyNS + ".svc.cluster.local"}
	for _, suffix := range []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", proxyNS + ".svc.cluster.local", "kube-system.svc.cluster.local", "bench-dns.svc.cluster.local"} {
		names = append(names, "api.example.com."+suffix)
	}
	for _, n := range names {
		ra, err := harness.Exchange(ctx, on.addr, dns.Fqdn(n), dns.TypeA)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := harness.Exchange(ctx, off.addr, dns.Fqdn(n), dns.TypeA)
		if err != nil {
			t.Fatal(err)
		}
		if ra.Rcode != rb.Rcode || len(ra.Answer) != len(rb.Answer) {
			t.Fatalf("%s: activation on answers %s/%d, off %s/%d: an inert hairpin must not change answers",
				n, dns.RcodeToString[ra.Rcode], len(ra.Answer), dns.RcodeToString[rb.Rcode], len(rb.Answer))
		}
	}
	var q strings.Builder
	for i := 0; i < 10000; i++ {
		n := names[2+rand.IntN(len(names)-2)]
		if i%4 == 0 {
			n = names[rand.IntN(2)]
		}
		q.WriteString(n + " A\n")
	}
	qf := harness.WriteFile(t, dir, "queries-activation.txt", q.String())

	servers := []*server{on, off}
	for _, s := range servers {
		if _, err := runDNSPerf(ctx, s.ip, s.port, qf, time.Second, dir, s.name+"-warmup"); err != nil {
			t.Fatalf("%s warm-up: %v", s.name, err)
		}
	}
	qps := map[string][]float64{}
	for rep := 0; rep < cfg.reps+2; rep++ {
		// Alternate which goes first, so that neither always runs on a
		// machine warmed (or loaded) by the other.
		order := servers
		if rep%2 == 1 {
			order = []*server{off, on}
		}
		for _, s := range order {
			r, err := runDNSPerf(ctx, s.ip, s.port, qf, cfg.dnsDur, dir, fmt.Sprintf("%s-%d", s.name, rep))
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			if r.Lost*100 > r.Sent {
				t.Fatalf("%s: %d of %d queries lost", s.name, r.Lost, r.Sent)
			}
			t.Logf("bench: dns %-14s rep %d: %8.0f qps, avg %6.0f us, p99 %6.0f us, rcodes %v", s.name, rep, r.QPS, r.AvgUS, r.P99US, r.Rcodes)
			qps[s.name] = append(qps[s.name], r.QPS)
		}
	}
	qOn, qOff := median(qps[on.name]), median(qps[off.name])
	ratio := qOn / qOff
	res.DNSExtra["activation_stock_corefile"] = "kubeadm v1.37.2 (test/e2e/testdata/corefiles/kubeadm.Corefile)"
	res.DNSExtra["activation_on_qps"] = round(qOn, 0)
	res.DNSExtra["activation_off_qps"] = round(qOff, 0)
	res.DNSExtra["activation_on_qps_runs"] = roundAll(qps[on.name], 0)
	res.DNSExtra["activation_off_qps_runs"] = roundAll(qps[off.name], 0)
	res.DNSExtra["activation_on_off_ratio"] = round(ratio, 3)
	res.DNSExtra["activation_within_target"] = ratio >= activationTarget
	verdict := "within"
	if ratio < activationTarget {
		verdict = "BELOW"
	}
	t.Logf("bench: stock Corefile, no target: activation on %.0f qps, off %.0f qps: %.3f× (%s the %.2f× target)", qOn, qOff, ratio, verdict, activationTarget)
	for _, s := range []*server{on, off, {name: "public", proc: pub}} {
		s.proc.Stop()
	}
}

// TestBenchActivation runs benchActivation alone, with its own control
// plane, for a quick look (HAIRPIN_BENCH=1 go test -run TestBenchActivation
// ./test/bench/); make bench runs it inside TestBench. It writes no results
// file.
func TestBenchActivation(t *testing.T) {
	if os.Getenv(EnvBench) != "1" {
		t.Skipf("benchmarks run only with %s=1 (make bench)", EnvBench)
	}
	for _, tool := range []string{"dnsperf"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing (make bench installs it): %v", tool, err)
		}
	}
	bin := map[string]string{"coredns": harness.RequireBinary(t, "coredns")}
	cp := harness.NewControlPlane(t, harness.ControlPlaneOptions{})
	k := &kube{cp: cp}
	res := &Results{DNSExtra: map[string]any{}}
	benchActivation(t, newConfig(), bin, k, res)
	t.Logf("bench: %v", res.DNSExtra)
}
