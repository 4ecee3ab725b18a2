package bench

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

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
	public, pub := publicUpstream(ctx, t, bin["coredns"], dir)
	on := startStock(ctx, t, k, bin["coredns"], "activation-on", public, dir)
	off := startStock(ctx, t, k, bin["coredns"], "activation-off", public, dir, "-hairpin.activate=false")
	if !strings.Contains(on.proc.Output(), "plugin/hairpin: activated in server block") {
		t.Fatalf("activation-on did not activate hairpin:\n%s", on.proc.Output())
	}
	if !strings.Contains(off.proc.Output(), "plugin/hairpin: activation is off") {
		t.Fatalf("activation-off did not turn activation off:\n%s", off.proc.Output())
	}

	// The query mix; an inert hairpin must not change any answer to it.
	names := []string{"kubernetes.default.svc.cluster.local", proxyName + "." + proxyNS + ".svc.cluster.local"}
	for _, suffix := range []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", proxyNS + ".svc.cluster.local", "kube-system.svc.cluster.local", "bench-dns.svc.cluster.local"} {
		names = append(names, "api.example.com."+suffix)
	}
	sameAnswers(ctx, t, on, off, names)
	var q strings.Builder
	for i := 0; i < 10000; i++ {
		n := names[2+rand.IntN(len(names)-2)]
		if i%4 == 0 {
			n = names[rand.IntN(2)]
		}
		q.WriteString(n + " A\n")
	}
	qf := harness.WriteFile(t, dir, "queries-activation.txt", q.String())

	qps := interleavedQPS(ctx, t, cfg, on, off, qf, dir, cfg.reps+2)
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
	for _, p := range []*harness.Process{on.proc, off.proc, pub} {
		p.Stop()
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
