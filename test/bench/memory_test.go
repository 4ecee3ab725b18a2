package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	networking "k8s.io/api/networking/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// hairpinSpec is the memory/propagation Corefile: hairpin answering
// example.com, plus ready (startup time) and pprof (its heap endpoint with
// gc=1 is the only way to force a GC in CoreDNS before reading RSS).
func hairpinSpec(k *kube) coreDNSSpec {
	return coreDNSSpec{name: "hairpin", ready: true, pprof: true, body: func(ip string, port int, ready, pprof string) string {
		return fmt.Sprintf("example.com:%d {\n    bind %s\n    ready %s\n    pprof %s\n    hairpin {\n        kubeconfig %s\n    }\n}\n",
			port, ip, ready, pprof, k.cp.Kubeconfig)
	}}
}

type memSample struct {
	rss, syncS, heapInuse, heapSys, sys float64
	peak                                float64 // VmHWM: the most RSS the process ever had, the first sync's peak
}

// measureCoreDNS starts bin/coredns with hairpin, times start → /ready 200,
// checks answers for n realistic Ingresses, forces a GC, lets the scavenger
// settle and returns the smallest of several VmRSS samples.
func measureCoreDNS(t *testing.T, cfg config, bin string, k *kube, n int) memSample {
	return measureSpec(t, cfg, bin, hairpinSpec(k), n, func(ctx context.Context, s *coreDNS, _ time.Time) error {
		for _, i := range []int{0, n - 1, rand.IntN(n)} {
			for _, h := range []string{fmt.Sprintf("app-%05d.example.com", i), fmt.Sprintf("api-%05d.example.com", i)} {
				ok, desc, err := answers(ctx, s.addr, h, k.proxyIP)
				if err != nil || !ok {
					return fmt.Errorf("%s after ready: %s %v", h, desc, err)
				}
			}
		}
		return nil
	})
}

// measureSpec is measureCoreDNS for any Corefile with ready and pprof: check
// runs once after /ready (start is when the process was started) and must
// find the n objects answered; it is not called for n = 0.
func measureSpec(t *testing.T, cfg config, bin string, spec coreDNSSpec, n int, check func(ctx context.Context, s *coreDNS, start time.Time) error) memSample {
	ctx := t.Context()
	s := startCoreDNS(t, bin, spec)
	start := time.Now()
	if dir := os.Getenv(EnvProfileDir); dir != "" && n > 0 {
		// A CPU profile of the first sync, from as soon as pprof listens.
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			pctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			for pctx.Err() == nil {
				b, code, err := httpGet(pctx, "http://"+s.pprofAddr+"/debug/pprof/profile?seconds=25")
				if err == nil && code == http.StatusOK {
					_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("coredns-%s-%d.sync.cpu.pprof", spec.name, n)), b, 0o644)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	readyURL := "http://" + s.readyAddr + "/ready"
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := client.Get(readyURL)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if exited, err := s.proc.Exited(); exited {
			t.Fatalf("coredns exited before ready: %v\n%s", err, tail(s.proc.Output(), 4000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("coredns not ready after 3 minutes:\n%s", tail(s.proc.Output(), 4000))
		}
		time.Sleep(2 * time.Millisecond)
	}
	var m memSample
	m.syncS = time.Since(start).Seconds()
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute) // a first sync of 100,000 objects on a loaded machine takes tens of seconds
	defer cancel()
	if err := s.waitServing(wctx); err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		if err := check(wctx, s, start); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second)
	if _, code, err := httpGet(ctx, "http://"+s.pprofAddr+"/debug/pprof/heap?gc=1"); err != nil || code != 200 {
		t.Fatalf("forced GC through pprof: HTTP %d, %v", code, err)
	}
	// The background scavenger returns the memory freed by the GC to the
	// OS over 10-30 s after a 10k-object list: sample every second until
	// VmRSS has not fallen for 5 s (at most cfg.settle), and keep the min.
	rss, err := settledRSS(s.proc.Cmd.Process.Pid, cfg.settle)
	if err != nil {
		t.Fatal(err)
	}
	m.rss = rss
	if m.peak, err = statusMB(s.proc.Cmd.Process.Pid, "VmHWM:"); err != nil {
		t.Fatal(err)
	}
	if b, code, err := httpGet(ctx, "http://"+s.pprofAddr+"/debug/pprof/heap?debug=1"); err == nil && code == 200 {
		stats := memStats(string(b))
		m.heapInuse, m.heapSys, m.sys = stats["HeapInuse"]/(1<<20), stats["HeapSys"]/(1<<20), stats["Sys"]/(1<<20)
	}
	if dir := os.Getenv(EnvProfileDir); dir != "" && n > 0 {
		// The heap profile says where the extra RSS of n objects goes.
		if b, code, err := httpGet(ctx, "http://"+s.pprofAddr+"/debug/pprof/heap"); err == nil && code == 200 {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("coredns-%s-%d.heap.pprof", spec.name, n)), b, 0o644)
		}
	}
	s.proc.Stop()
	t.Logf("bench: coredns with %d Ingresses: ready after %.3f s, VmRSS %.1f MiB (Go heap in use %.1f MiB, Sys %.1f MiB)", n, m.syncS, m.rss, m.heapInuse, m.sys)
	return m
}

// memStats parses the runtime.MemStats comment lines ("# HeapInuse = 123")
// at the end of /debug/pprof/heap?debug=1.
func memStats(s string) map[string]float64 {
	out := map[string]float64{}
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "# ") {
			continue
		}
		f := strings.Fields(l)
		if len(f) == 4 && f[2] == "=" {
			if v, err := strconv.ParseFloat(f[3], 64); err == nil {
				out[f[1]] = v
			}
		}
	}
	return out
}

func benchRSS0(t *testing.T, cfg config, bin map[string]string, k *kube, res *Results) {
	var rss, syncS, heap []float64
	for rep := 0; rep < cfg.reps; rep++ {
		m := measureCoreDNS(t, cfg, bin["coredns"], k, 0)
		rss, syncS, heap = append(rss, m.rss), append(syncS, m.syncS), append(heap, m.heapInuse)
	}
	res.Memory.RSS0 = round(median(rss), 1)
	res.MemExtra["rss_0_runs"] = roundAll(rss, 1)
	res.MemExtra["sync_0_s"] = round(median(syncS), 3)
	res.MemExtra["heap_inuse_0_mb"] = round(median(heap), 1)
}

func benchRSS10k(t *testing.T, cfg config, bin map[string]string, k *kube, res *Results) {
	var rss, syncS, heap []float64
	for rep := 0; rep < cfg.reps; rep++ {
		m := measureCoreDNS(t, cfg, bin["coredns"], k, cfg.objects)
		rss, syncS, heap = append(rss, m.rss), append(syncS, m.syncS), append(heap, m.heapInuse)
	}
	res.Memory.RSS10k = round(median(rss), 1)
	res.Memory.Sync10kS = round(median(syncS), 3)
	res.MemExtra["rss_10k_runs"] = roundAll(rss, 1)
	res.MemExtra["sync_10k_runs_s"] = roundAll(syncS, 3)
	res.MemExtra["heap_inuse_10k_mb"] = round(median(heap), 1)
	res.MemExtra["extra_rss_10k_mb"] = round(res.Memory.RSS10k-res.Memory.RSS0, 1)
	res.MemExtra["ingresses"] = cfg.objects
	res.MemExtra["hosts"] = 2 * cfg.objects
	res.MemExtra["method"] = "VmRSS after a forced GC (pprof heap?gc=1, 2 s after /ready), sampled every second until it has not fallen for 5 s (at most " + cfg.settle.String() + "), the minimum; sync = process start to /ready 200"
}

// benchPropagation creates, renames and deletes Ingresses while 10,000 are
// present and polls CoreDNS every ~1 ms until the answer reflects the change.
// Each sample runs from just before the API call to the first changed answer.
func benchPropagation(t *testing.T, cfg config, bin map[string]string, k *kube, res *Results) {
	ctx := t.Context()
	s := startCoreDNS(t, bin["coredns"], hairpinSpec(k))
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := s.waitServing(wctx); err != nil {
		t.Fatal(err)
	}
	c := &dns.Client{Net: "udp", Timeout: 100 * time.Millisecond}
	query := func(host string) bool {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(host), dns.TypeA)
		r, _, err := c.Exchange(m, s.addr)
		if err != nil {
			return false
		}
		for _, a := range harness.ARecords(r) {
			if r.Rcode == dns.RcodeSuccess && a.String() == k.proxyIP {
				return true
			}
		}
		return false
	}
	ings := k.client.NetworkingV1().Ingresses(propNS)
	var all, api []float64
	byOp := map[string][]float64{}
	polls := 0
	measure := func(op, host string, want bool, change func() error) {
		if query(host) == want {
			t.Fatalf("%s %s: answer already %v before the change", op, host, want)
		}
		t0 := time.Now()
		if err := change(); err != nil {
			t.Fatalf("%s %s: %v", op, host, err)
		}
		apiD := time.Since(t0)
		for !(query(host) == want) {
			polls++
			if time.Since(t0) > 30*time.Second {
				t.Fatalf("%s %s: answer did not change within 30 s", op, host)
			}
			time.Sleep(time.Millisecond)
		}
		d := float64(time.Since(t0).Microseconds()) / 1000
		all = append(all, d)
		api = append(api, float64(apiD.Microseconds())/1000)
		byOp[op] = append(byOp[op], d)
	}
	for j := 0; len(all) < cfg.propChanges; j++ {
		name := fmt.Sprintf("prop-%04d", j)
		h1, h2 := name+".example.com", name+"-renamed.example.com"
		var cur *networking.Ingress
		measure("create", h1, true, func() error {
			ing := dnsIngress(0)
			ing.Namespace, ing.Name = propNS, name
			ing.Spec.Rules[0].Host = h1
			var err error
			cur, err = ings.Create(ctx, ing, meta.CreateOptions{})
			return err
		})
		measure("update", h2, true, func() error {
			cur.Spec.Rules[0].Host = h2
			var err error
			cur, err = ings.Update(ctx, cur, meta.UpdateOptions{})
			return err
		})
		if query(h1) {
			// The rename must also retire the old host.
			time.Sleep(100 * time.Millisecond)
			if query(h1) {
				t.Fatalf("%s is still answered after the rename to %s", h1, h2)
			}
		}
		measure("delete", h2, false, func() error { return ings.Delete(ctx, name, meta.DeleteOptions{}) })
	}
	s.proc.Stop()
	res.Propagation.P50 = round(percentile(all, 50), 1)
	res.Propagation.P99 = round(percentile(all, 99), 1)
	res.Propagation.N = len(all)
	for op, xs := range byOp {
		res.PropExtra[op+"_p50_ms"] = round(percentile(xs, 50), 1)
		res.PropExtra[op+"_p99_ms"] = round(percentile(xs, 99), 1)
		res.PropExtra[op+"_n"] = len(xs)
	}
	res.PropExtra["api_call_p50_ms"] = round(percentile(api, 50), 1)
	res.PropExtra["api_call_p99_ms"] = round(percentile(api, 99), 1)
	res.PropExtra["max_ms"] = round(percentile(all, 100), 1)
	res.PropExtra["background_ingresses"] = cfg.objects
	res.PropExtra["method"] = "create / rename host / delete of one Ingress, clock from just before the API call to the first changed A answer; UDP poll every ~1 ms"
	t.Logf("bench: propagation over %d changes: p50 %.1f ms, p99 %.1f ms, max %.1f ms (API call p50 %.1f ms), %d extra polls",
		len(all), res.Propagation.P50, res.Propagation.P99, percentile(all, 100), percentile(api, 50), polls)
}

// settledRSS samples VmRSS every second after a GC until the minimum has not
// dropped by more than 0.1 MiB for 5 samples, or max has passed, and returns
// the minimum.
func settledRSS(pid int, maxWait time.Duration) (float64, error) {
	best, stable := 0.0, 0
	deadline := time.Now().Add(maxWait)
	for {
		v, err := rssMB(pid)
		if err != nil {
			return 0, err
		}
		if best == 0 || v < best-0.1 {
			best, stable = v, 0
		} else {
			stable++
			best = min(best, v)
		}
		if stable >= 5 || time.Now().After(deadline) {
			return best, nil
		}
		time.Sleep(time.Second)
	}
}
