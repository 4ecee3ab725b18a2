package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	core "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/build/plugincfg"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// orderTarget is issue 23's bar: with hairpin in front of cache, queries for
// names that are not hairpin hosts keep at least this share of the QPS they
// had with hairpin behind cache.
const orderTarget = 0.98

// orderBinaries builds build/coredns twice with the same command: with
// plugin.cfg's directive order ("front": hairpin immediately before cache),
// and with the order before issue 23 ("behind": hairpin after cache, right
// before hosts). Each gets its zplugin.go rendered by build/plugincfg from
// its plugin list and swapped in with go build -overlay, so nothing in the
// tree changes and the two binaries differ in the directive list alone.
func orderBinaries(ctx context.Context, t *testing.T) (front, behind string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "plugin.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	plugins, err := plugincfg.Parse(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	build := func(name string, plugins []plugincfg.Plugin) string {
		src, err := plugincfg.Render("main", plugins)
		if err != nil {
			t.Fatal(err)
		}
		zplugin := harness.WriteFile(t, dir, "zplugin-"+name+".go", string(src))
		overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, "build", "coredns", "zplugin.go"): zplugin}})
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "coredns-"+name)
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-overlay", harness.WriteFile(t, dir, "overlay-"+name+".json", string(overlay)), "-o", bin, "./build/coredns")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the %s order: %v\n%s", name, err, out)
		}
		return bin
	}
	behindCache, err := hairpinBehindCache(plugins)
	if err != nil {
		t.Fatal(err)
	}
	return build("front", plugins), build("behind", behindCache)
}

// hairpinBehindCache is plugins with hairpin moved to where it stood before
// issue 23: right before hosts, so after cache, header, dnssec and minimal.
func hairpinBehindCache(plugins []plugincfg.Plugin) ([]plugincfg.Plugin, error) {
	i := slices.IndexFunc(plugins, func(p plugincfg.Plugin) bool { return p.Name == "hairpin" })
	if i < 0 {
		return nil, fmt.Errorf("plugin.cfg lists no hairpin")
	}
	hp := plugins[i]
	rest := slices.Delete(slices.Clone(plugins), i, i+1)
	h := slices.IndexFunc(rest, func(p plugincfg.Plugin) bool { return p.Name == "hosts" })
	c := slices.IndexFunc(rest, func(p plugincfg.Plugin) bool { return p.Name == "cache" })
	if h < 0 || c < 0 || c > h {
		return nil, fmt.Errorf("plugin.cfg: want cache before hosts (cache at %d, hosts at %d)", c, h)
	}
	return slices.Insert(rest, h, hp), nil
}

// benchOrderPhase is the plugin-order benchmark on its own control plane:
// the manifests' default target (every class, in example.com) and
// cfg.objects one-host Ingresses, so that every query does a real lookup in
// a populated index.
func benchOrderPhase(t *testing.T, cfg config, bin map[string]string, res *Results) {
	k := newKube(t)
	ctx := t.Context()
	for _, ns := range []string{proxyNS, dnsNS} {
		if _, err := k.client.CoreV1().Namespaces().Create(ctx, &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: ns}}, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := createTarget(ctx, k.client, targetService(proxyNS, proxyName, "example.com", "*"))
	if err != nil {
		t.Fatal(err)
	}
	k.proxyIP = svc.Spec.ClusterIP
	if err := k.createN(ctx, cfg.objects, dnsIngress); err != nil {
		t.Fatal(err)
	}
	benchOrder(t, cfg, k, cfg.objects, res)
}

// benchOrder measures what putting hairpin in front of cache costs the
// names that are not hairpin hosts: kubeadm's stock Corefile, with hairpin
// activated by the image and n hosts in its index, in the binary of each
// order, side by side, interleaved, the same dnsperf load.
//
// The load is what a cluster's CoreDNS mostly sees, none of it a hairpin
// host: a quarter existing Services, half the search-path expansions of an
// external name (NXDOMAIN; kubeadm's Corefile caches nothing under
// cluster.local), and a quarter external names that cache answers (the
// public zone's names that no Ingress claims). The last are the ones the
// order changes: behind cache they never reached hairpin; in front of it
// they cost one index lookup before cache answers.
func benchOrder(t *testing.T, cfg config, k *kube, n int, res *Results) {
	ctx := t.Context()
	bctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	front, behind := orderBinaries(bctx, t)
	cancel()
	dir := t.TempDir()
	public, pub := publicUpstream(ctx, t, front, dir)
	a := startStock(ctx, t, k, front, "order-front", public, dir)
	b := startStock(ctx, t, k, behind, "order-behind", public, dir)
	for _, s := range []*stockServer{a, b} {
		if !strings.Contains(s.proc.Output(), "plugin/hairpin: activated in server block") {
			t.Fatalf("%s did not activate hairpin:\n%s", s.name, s.proc.Output())
		}
		// hairpin is live in both, with the whole index: first and last host.
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := harness.Poll(wctx, func(ctx context.Context) error {
			for _, h := range []string{dnsHost(0), dnsHost(n - 1)} {
				if ok, desc, err := answers(ctx, s.addr, h, k.proxyIP); err != nil || !ok {
					return fmt.Errorf("%s: %s: %s %v", s.name, h, desc, err)
				}
			}
			return nil
		})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}

	services := []string{"kubernetes.default.svc.cluster.local", proxyName + "." + proxyNS + ".svc.cluster.local"}
	var expansions []string
	for _, suffix := range []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", proxyNS + ".svc.cluster.local", "kube-system.svc.cluster.local", dnsNS + ".svc.cluster.local"} {
		expansions = append(expansions, "api.example.com."+suffix)
	}
	external := []string{"www.example.com", "static.example.com", "cdn.example.com", "mail.example.com"}
	sameAnswers(ctx, t, a, b, slices.Concat(services, expansions, external))
	for _, h := range external {
		if ok, _, _ := answers(ctx, a.addr, h, k.proxyIP); ok {
			t.Fatalf("%s is answered with the proxy: it must not be a hairpin host", h)
		}
	}
	var q bytes.Buffer
	for i := 0; i < 10000; i++ {
		var name string
		switch i % 4 {
		case 0:
			name = services[rand.IntN(len(services))]
		case 1, 2:
			name = expansions[rand.IntN(len(expansions))]
		default:
			name = external[rand.IntN(len(external))]
		}
		q.WriteString(name + " A\n")
	}
	qf := harness.WriteFile(t, dir, "queries-order.txt", q.String())

	load := loadAvg()
	qps := interleavedQPS(ctx, t, cfg, a, b, qf, dir, cfg.reps+2)
	qFront, qBehind := median(qps[a.name]), median(qps[b.name])
	ratio := qFront / qBehind
	res.DNSExtra["order_stock_corefile"] = "kubeadm v1.37.2 (test/e2e/testdata/corefiles/kubeadm.Corefile), hairpin activated by the image"
	res.DNSExtra["order_index_hosts"] = n
	res.DNSExtra["order_front_qps"] = round(qFront, 0)
	res.DNSExtra["order_behind_qps"] = round(qBehind, 0)
	res.DNSExtra["order_front_qps_runs"] = roundAll(qps[a.name], 0)
	res.DNSExtra["order_behind_qps_runs"] = roundAll(qps[b.name], 0)
	res.DNSExtra["order_ratio"] = round(ratio, 3)
	res.DNSExtra["order_loadavg"] = load + " → " + loadAvg()
	res.DNSExtra["order_method"] = "the same source built twice, plugin.cfg's order (hairpin immediately before cache) and hairpin behind cache (right before hosts, the order before issue 23); queries: 1/4 Services, 1/2 search-path NXDOMAINs, 1/4 cached external names, none a hairpin host; dnsperf interleaved, alternating which goes first; medians"
	verdict := "within"
	if ratio < orderTarget {
		verdict = "BELOW"
	}
	t.Logf("bench: stock Corefile, %d hosts, non-hairpin names: hairpin in front of cache %.0f qps, behind %.0f qps: %.3f× (%s the %.2f× target), load %s", n, qFront, qBehind, ratio, verdict, orderTarget, res.DNSExtra["order_loadavg"])
	for _, p := range []*harness.Process{a.proc, b.proc, pub} {
		p.Stop()
	}
}

// orderRows is the plugin-order line of the targets table; nothing when
// the phase has not run.
func orderRows(r *Results, row func(measure, ours, cmp, rat, target string, ok bool)) {
	rt, ok := r.DNSExtra["order_ratio"].(float64)
	if !ok {
		return
	}
	row(fmt.Sprintf("DNS QPS of names that are not hairpin hosts, stock kubeadm Corefile, hairpin in front of cache vs behind it (%v hosts in the index)", r.DNSExtra["order_index_hosts"]),
		fmt.Sprintf("%v qps", r.DNSExtra["order_front_qps"]), fmt.Sprintf("behind cache %v qps", r.DNSExtra["order_behind_qps"]), fmt.Sprintf("%.3f×", rt), fmt.Sprintf("≥ %.2f×", orderTarget), rt >= orderTarget)
}

// TestBenchOrder runs benchOrderPhase alone, with its own control plane, for
// a quick look (HAIRPIN_BENCH=1 go test -run TestBenchOrder ./test/bench/);
// make bench runs it as the order phase. It writes no results file.
func TestBenchOrder(t *testing.T) {
	if os.Getenv(EnvBench) != "1" {
		t.Skipf("benchmarks run only with %s=1 (make bench)", EnvBench)
	}
	if _, err := exec.LookPath("dnsperf"); err != nil {
		t.Fatalf("dnsperf is missing (make bench installs it): %v", err)
	}
	res := &Results{DNSExtra: map[string]any{}}
	benchOrderPhase(t, newConfig(), nil, res)
	t.Logf("bench: %v", res.DNSExtra)
}
