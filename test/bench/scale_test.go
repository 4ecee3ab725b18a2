package bench

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	core "k8s.io/api/core/v1"
	networking "k8s.io/api/networking/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// The scale phase (issue 11): the multi-target index with cfg.scaleIngresses
// production-shaped Ingresses of two hosts each, spread evenly over
// cfg.scaleTargets targets, each target with its own IngressClass, zone and
// tenant namespace, as Cozystack runs one ingress controller per tenant. The
// 10-host case is a second bin/coredns on the same apiserver that discovers
// one target in its own namespace and watches only its own 5 Ingresses.
const (
	scaleSmallNS      = "scale-small"         // the 10-host case's Ingresses
	scaleSmallTargets = "scale-small-targets" // and its one target
	scaleSmallClass   = "small"
	scaleSmallZone    = "small.example.com"
	scaleSmallN       = 5 // Ingresses of the 10-host case
)

func tenant(t int) string    { return fmt.Sprintf("tenant-%03d", t) }
func scaleZone(t int) string { return tenant(t) + ".example.com" }

// scaleEnv is the scale phase's cluster.
type scaleEnv struct {
	k       *kube
	cfg     config
	ips     []string // ClusterIP of tenant t's target
	smallIP string
	public  string // the forward upstream of the kubeadm Corefile
}

// tenantOf is the tenant (and target) of Ingress i.
func (e *scaleEnv) tenantOf(i int) int { return i % e.cfg.scaleTargets }

// host is the first host of Ingress i; the second is api-… .
func (e *scaleEnv) host(i int) string {
	return fmt.Sprintf("app-%06d.%s", i, scaleZone(e.tenantOf(i)))
}

func (e *scaleEnv) ingress(i int) *networking.Ingress {
	t := e.tenantOf(i)
	return productionIngress(tenant(t), fmt.Sprintf("app-%06d", i), tenant(t), e.host(i), fmt.Sprintf("api-%06d.%s", i, scaleZone(t)))
}

// smallHostOf is host i of the 10-host case: app- and api- of each Ingress.
func smallHostOf(i int) string {
	if i%2 == 0 {
		return fmt.Sprintf("app-%d.%s", i/2, scaleSmallZone)
	}
	return fmt.Sprintf("api-%d.%s", i/2, scaleSmallZone)
}

// spec is the Corefile of the scale phase: hairpin discovering targets and
// answering example.com, no cache plugin. small restricts it to the 10-host
// case's target namespace and Ingress namespace; metrics, when not empty,
// adds the prometheus plugin there.
func (e *scaleEnv) spec(name string, small, ready, pprof bool, metrics string) coreDNSSpec {
	return coreDNSSpec{name: name, ready: ready, pprof: pprof, body: func(ip string, port int, readyAddr, pprofAddr string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "example.com:%d {\n    bind %s\n", port, ip)
		if readyAddr != "" {
			fmt.Fprintf(&b, "    ready %s\n", readyAddr)
		}
		if pprofAddr != "" {
			fmt.Fprintf(&b, "    pprof %s\n", pprofAddr)
		}
		if metrics != "" {
			fmt.Fprintf(&b, "    prometheus %s\n", metrics)
		}
		fmt.Fprintf(&b, "    hairpin {\n        kubeconfig %s\n", e.k.cp.Kubeconfig)
		if small {
			fmt.Fprintf(&b, "        targets %s\n        namespaces %s\n", scaleSmallTargets, scaleSmallNS)
		}
		b.WriteString("    }\n}\n")
		return b.String()
	}}
}

// kubeadmSpec is the memory Corefile (issue 23): kubeadm's stock Corefile
// (test/e2e/testdata/corefiles, pointed at loopback by e2e.LocalCorefile),
// hairpin activated by the image (discovering targets in hairpin-system,
// where the tenants' targets are), with the prometheus plugin at metrics and
// one line added: pprof, whose heap endpoint with gc=1 is the only way to
// force a GC in CoreDNS before reading RSS.
func (e *scaleEnv) kubeadmSpec(t *testing.T, name, metrics string) coreDNSSpec {
	return coreDNSSpec{name: name, ready: true, pprof: true, activate: true, body: func(ip string, port int, ready, pprof string) string {
		src, err := e2e.DistributionCorefile("kubeadm")
		if err != nil {
			t.Fatal(err)
		}
		local, err := e2e.LocalCorefile(src, e2e.LocalEnv{
			Listen: fmt.Sprintf("%s:%d", ip, port), Health: harness.FreeAddr(t, "127.0.0.1"), Ready: ready, Metrics: metrics,
			Kubeconfig: e.k.cp.Kubeconfig, Upstream: e.public, Dir: t.TempDir(),
		})
		if err != nil {
			t.Fatal(err)
		}
		readyLine := "    ready " + ready + "\n"
		if !strings.Contains(local, readyLine) {
			t.Fatalf("kubeadm Corefile has no %q line:\n%s", readyLine, local)
		}
		return strings.Replace(local, readyLine, readyLine+"    pprof "+pprof+"\n", 1)
	}}
}

// benchScale runs the scale phase on its own control plane, so that its
// 100,000 objects do not weigh on the other phases' apiserver.
func benchScale(t *testing.T, cfg config, bin map[string]string, res *Results) {
	// A BENCH_ONLY=scale run replaces the previous scale figures entirely.
	res.Scale = ScaleResults{Targets: cfg.scaleTargets, Ingresses: cfg.scaleIngresses, Hosts: 2 * cfg.scaleIngresses}
	res.ScaleExtra = map[string]any{}
	res.ScaleExtra["date"] = time.Now().UTC().Format(time.RFC3339)
	res.ScaleExtra["machine"] = machine()
	res.ScaleExtra["loadavg_start"] = loadAvg()
	start := time.Now()
	defer func() {
		res.ScaleExtra["loadavg_end"] = loadAvg()
		res.ScaleExtra["duration_s"] = round(time.Since(start).Seconds(), 1)
	}()

	t.Run("go_bench", func(t *testing.T) { benchScaleGo(t, cfg, res) })

	e := &scaleEnv{k: newKube(t), cfg: cfg}
	if !t.Run("setup", func(t *testing.T) { e.setup(t) }) {
		return
	}
	metrics := harness.FreeAddr(t, "127.0.0.1")
	e.public, _ = publicUpstream(t.Context(), t, bin["coredns"], t.TempDir())
	large := e.kubeadmSpec(t, "scale-kubeadm", metrics)
	var rss0, sync0 []float64
	if !t.Run("memory_0", func(t *testing.T) {
		for rep := 0; rep < cfg.reps; rep++ {
			m := measureSpec(t, cfg, bin["coredns"], large, 0, nil)
			rss0, sync0 = append(rss0, m.rss), append(sync0, m.syncS)
		}
	}) {
		return
	}
	res.Scale.RSS0 = round(median(rss0), 1)
	res.ScaleExtra["rss_0_runs"] = roundAll(rss0, 1)
	res.ScaleExtra["ready_0_s"] = round(median(sync0), 3)

	if !t.Run("create", func(t *testing.T) {
		t0 := time.Now()
		if err := e.k.createN(t.Context(), cfg.scaleIngresses, e.ingress); err != nil {
			t.Fatal(err)
		}
		d := time.Since(t0)
		res.ScaleExtra["create_s"] = round(d.Seconds(), 1)
		res.ScaleExtra["create_per_s"] = round(float64(cfg.scaleIngresses)/d.Seconds(), 0)
		t.Logf("bench: scale: created %d Ingresses over %d tenants in %s (%.0f/s), load %s",
			cfg.scaleIngresses, cfg.scaleTargets, d.Round(time.Millisecond), float64(cfg.scaleIngresses)/d.Seconds(), loadAvg())
	}) {
		return
	}
	if !t.Run("memory", func(t *testing.T) { e.benchMemory(t, bin["coredns"], large, metrics, res) }) {
		return
	}
	if !t.Run("dns", func(t *testing.T) { e.benchDNS(t, bin["coredns"], res) }) {
		return
	}
	t.Run("propagation", func(t *testing.T) { e.benchPropagation(t, bin["coredns"], res) })
}

// setup creates the tenants' namespaces, IngressClasses and target
// Services, and the 10-host case.
func (e *scaleEnv) setup(t *testing.T) {
	ctx := t.Context()
	c := e.k.client
	nt := e.cfg.scaleTargets
	names := []string{proxyNS, scaleSmallNS, scaleSmallTargets}
	for i := 0; i < nt; i++ {
		names = append(names, tenant(i))
	}
	for _, ns := range names {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: ns}}, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	classes := []string{scaleSmallClass}
	for i := 0; i < nt; i++ {
		classes = append(classes, tenant(i))
	}
	for _, name := range classes {
		ic := &networking.IngressClass{ObjectMeta: meta.ObjectMeta{Name: name}, Spec: networking.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}}
		if _, err := c.NetworkingV1().IngressClasses().Create(ctx, ic, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.ips = make([]string, nt)
	for i := 0; i < nt; i++ {
		svc, err := createTarget(ctx, c, targetService(proxyNS, tenant(i), scaleZone(i), tenant(i)))
		if err != nil {
			t.Fatal(err)
		}
		e.ips[i] = svc.Spec.ClusterIP
	}
	svc, err := createTarget(ctx, c, targetService(scaleSmallTargets, scaleSmallClass, scaleSmallZone, scaleSmallClass))
	if err != nil {
		t.Fatal(err)
	}
	e.smallIP = svc.Spec.ClusterIP
	err = e.k.createN(ctx, scaleSmallN, func(i int) *networking.Ingress {
		return productionIngress(scaleSmallNS, fmt.Sprintf("small-%d", i), scaleSmallClass, smallHostOf(2*i), smallHostOf(2*i+1))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bench: scale: %d targets (%s … %s), 10-host case on %s", nt, e.ips[0], e.ips[nt-1], e.smallIP)
}

// benchMemory measures RSS and the first sync with every Ingress present:
// start → /ready, and start → the hosts gauge counting every host, which is
// what "all hosts answered" means (a sample is also queried).
func (e *scaleEnv) benchMemory(t *testing.T, bin string, spec coreDNSSpec, metrics string, res *Results) {
	want := 2 * e.cfg.scaleIngresses
	var rss, ready, all, cpu, heap, peak []float64
	for rep := 0; rep < e.cfg.reps; rep++ {
		var allS, cpuS float64
		m := measureSpec(t, e.cfg, bin, spec, e.cfg.scaleIngresses, func(ctx context.Context, s *coreDNS, start time.Time) error {
			if err := waitHosts(ctx, metrics, want); err != nil {
				return err
			}
			allS = time.Since(start).Seconds()
			cpuS = cpuSeconds(s.proc.Cmd.Process.Pid)
			return checkTargets(ctx, s, e.cfg.scaleIngresses, e.host, func(i int) string { return e.ips[e.tenantOf(i)] })
		})
		rss, ready, all, cpu, heap, peak = append(rss, m.rss), append(ready, m.syncS), append(all, allS), append(cpu, cpuS), append(heap, m.heapInuse), append(peak, m.peak)
		t.Logf("bench: scale: rep %d: ready %.3f s, all %d hosts served %.3f s (coredns CPU %.2f s), RSS %.1f MiB (peak %.1f MiB), load %s", rep, m.syncS, want, allS, cpuS, m.rss, m.peak, loadAvg())
	}
	res.Scale.RSS = round(median(rss), 1)
	res.Scale.ExtraRSS = round(res.Scale.RSS-res.Scale.RSS0, 1)
	res.Scale.SyncS = round(median(all), 3)
	res.ScaleExtra["rss_runs"] = roundAll(rss, 1)
	res.ScaleExtra["ready_s"] = round(median(ready), 3)
	res.ScaleExtra["ready_runs_s"] = roundAll(ready, 3)
	res.ScaleExtra["sync_runs_s"] = roundAll(all, 3)
	res.ScaleExtra["sync_cpu_s"] = round(median(cpu), 2)
	res.ScaleExtra["sync_cpu_runs_s"] = roundAll(cpu, 2)
	res.ScaleExtra["heap_inuse_mb"] = round(median(heap), 1)
	res.ScaleExtra["peak_rss_mb"] = round(median(peak), 1)
	res.ScaleExtra["peak_rss_runs"] = roundAll(peak, 1)
	res.ScaleExtra["memory_corefile"] = "kubeadm v1.37.2 stock Corefile (test/e2e/testdata/corefiles/kubeadm.Corefile), hairpin activated by the image, plus a pprof line to force the GC"
	res.ScaleExtra["memory_method"] = "VmRSS after a forced GC, settled, minimum (as the memory phase); 0 = the same Corefile with the targets and classes but no tenant Ingresses; sync = process start until coredns_hairpin_hosts{kind=exact} counts every host"
}

// waitHosts waits until the hosts gauge at metrics counts want exact hosts,
// polling every 20 ms (not harness.Poll's backoff: the sync time is a
// figure; not faster: each scrape costs CoreDNS CPU during the sync).
func waitHosts(ctx context.Context, metrics string, want int) error {
	for {
		samples, err := scrape(ctx, metrics)
		got := metricSum(samples, "coredns_hairpin_hosts", map[string]string{"kind": "exact"})
		if err == nil && int(got) == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("coredns_hairpin_hosts{kind=exact} = %.0f, want %d (%v): %w", got, want, err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// benchDNS runs dnsperf against the large and the 10-host server, interleaved.
func (e *scaleEnv) benchDNS(t *testing.T, bin string, res *Results) {
	ctx := t.Context()
	n := e.cfg.scaleIngresses
	large := startCoreDNS(t, bin, e.spec("scale-large", false, true, false, ""))
	small := startCoreDNS(t, bin, e.spec("scale-small", true, true, false, ""))
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	check := func(ctx context.Context) error {
		if err := checkTargets(ctx, large, n, e.host, func(i int) string { return e.ips[e.tenantOf(i)] }); err != nil {
			return err
		}
		return checkAnswers(ctx, small, 2*scaleSmallN, smallHostOf, e.smallIP)
	}
	for _, s := range []*coreDNS{large, small} {
		if err := s.waitServing(wctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := harness.Poll(wctx, check); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[*coreDNS]string{
		large: queryFile(t, dir, 2*n, func(i int) string {
			if i%2 == 0 {
				return e.host(i / 2)
			}
			return fmt.Sprintf("api-%06d.%s", i/2, scaleZone(e.tenantOf(i/2)))
		}),
		small: queryFile(t, dir, 2*scaleSmallN, smallHostOf),
	}
	servers := []*coreDNS{small, large}
	for _, s := range servers {
		if _, err := runDNSPerf(ctx, s.ip, s.port, files[s], time.Second, dir, s.name+"-warmup"); err != nil {
			t.Fatalf("%s warm-up: %v", s.name, err)
		}
	}
	qps := map[*coreDNS][]float64{}
	p99 := map[*coreDNS][]float64{}
	for rep := 0; rep < e.cfg.reps; rep++ {
		for _, s := range servers {
			r, err := runDNSPerf(ctx, s.ip, s.port, files[s], e.cfg.dnsDur, dir, fmt.Sprintf("%s-%d", s.name, rep))
			if err != nil {
				t.Fatal(err)
			}
			if bad := r.Completed - r.Rcodes["NOERROR"]; bad != 0 || r.Lost*100 > r.Sent {
				t.Fatalf("%s: %d answers not NOERROR (%v), %d of %d lost", s.name, bad, r.Rcodes, r.Lost, r.Sent)
			}
			t.Logf("bench: scale dns %-11s rep %d: %8.0f qps, p50 %5.0f us, p99 %5.0f us, load %s", s.name, rep, r.QPS, r.P50US, r.P99US, loadAvg())
			qps[s], p99[s] = append(qps[s], r.QPS), append(p99[s], r.P99US)
		}
	}
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	if err := check(cctx); err != nil {
		t.Fatal(err)
	}
	large.proc.Stop()
	small.proc.Stop()
	res.Scale.QPSSmall = round(median(qps[small]), 0)
	res.Scale.QPSLarge = round(median(qps[large]), 0)
	res.ScaleExtra["qps_small_runs"] = roundAll(qps[small], 0)
	res.ScaleExtra["qps_large_runs"] = roundAll(qps[large], 0)
	res.ScaleExtra["dns_p99_us_small"] = round(median(p99[small]), 0)
	res.ScaleExtra["dns_p99_us_large"] = round(median(p99[large]), 0)
}

// benchPropagation applies cfg.scaleRate changes per second, open loop,
// while every Ingress is present, cycling through three kinds: a new
// Ingress, a renamed host, and an Ingress moved to another tenant's class
// (so to another target, with a host in that target's zone). Each sample
// runs from just before the API call until CoreDNS answers the new host
// with the right target's address (UDP poll every ~1 ms). The plugin's own
// coredns_hairpin_index_update_delay_seconds histogram over the same
// changes is reported beside it.
func (e *scaleEnv) benchPropagation(t *testing.T, bin string, res *Results) {
	ctx := t.Context()
	metrics := harness.FreeAddr(t, "127.0.0.1")
	s := startCoreDNS(t, bin, e.spec("scale-prop", false, true, false, metrics))
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := s.waitServing(wctx); err != nil {
		t.Fatal(err)
	}
	// Changes start once the first sync is complete, not at /ready, which
	// startup_timeout may have opened earlier.
	if err := waitHosts(wctx, metrics, 2*e.cfg.scaleIngresses); err != nil {
		t.Fatal(err)
	}
	if err := checkTargets(wctx, s, e.cfg.scaleIngresses, e.host, func(i int) string { return e.ips[e.tenantOf(i)] }); err != nil {
		t.Fatal(err)
	}
	clock := startEventClock(wctx, t, e.k)
	before, err := scrape(wctx, metrics)
	if err != nil {
		t.Fatal(err)
	}

	nt, n := e.cfg.scaleTargets, e.cfg.scaleIngresses
	ings := e.k.client.NetworkingV1()
	var mu sync.Mutex
	byOp := map[string][]float64{}
	var all, api, watch []float64  // watch: from the API's answer to CoreDNS's
	var informer, excess []float64 // the bare informer's delay, and ours less it, per change
	var errs []error
	var moved []int // Ingresses moved away: their old host must go
	fail := func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
	// change makes the j-th change; it returns the host that must appear,
	// the address it must get, and the API call to time.
	change := func(j int) (op, host, ip string, call func() error, err error) {
		i := (j * 7919) % n // distinct existing Ingresses; 7919 is prime to n
		switch j % 3 {
		case 0:
			tn := j % nt
			name := fmt.Sprintf("prop-%05d", j)
			host = fmt.Sprintf("%s.%s", name, scaleZone(tn))
			ing := productionIngress(tenant(tn), name, tenant(tn), host, fmt.Sprintf("%s-api.%s", name, scaleZone(tn)))
			return "create", host, e.ips[tn], func() error {
				_, err := ings.Ingresses(ing.Namespace).Create(ctx, ing, meta.CreateOptions{})
				return err
			}, nil
		case 1:
			tn := e.tenantOf(i)
			host = fmt.Sprintf("app-%06d-v2.%s", i, scaleZone(tn))
			ing := e.ingress(i)
			cur, err := ings.Ingresses(ing.Namespace).Get(ctx, ing.Name, meta.GetOptions{})
			if err != nil {
				return "", "", "", nil, err
			}
			next := productionIngress(ing.Namespace, ing.Name, tenant(tn), host, fmt.Sprintf("api-%06d-v2.%s", i, scaleZone(tn)))
			cur.Spec = next.Spec
			return "rename", host, e.ips[tn], func() error {
				_, err := ings.Ingresses(cur.Namespace).Update(ctx, cur, meta.UpdateOptions{})
				return err
			}, nil
		default:
			u := (e.tenantOf(i) + 1) % nt
			host = fmt.Sprintf("app-%06d.%s", i, scaleZone(u))
			ing := e.ingress(i)
			cur, err := ings.Ingresses(ing.Namespace).Get(ctx, ing.Name, meta.GetOptions{})
			if err != nil {
				return "", "", "", nil, err
			}
			next := productionIngress(ing.Namespace, ing.Name, tenant(u), host, fmt.Sprintf("api-%06d.%s", i, scaleZone(u)))
			cur.Spec = next.Spec
			mu.Lock()
			moved = append(moved, i)
			mu.Unlock()
			return "move", host, e.ips[u], func() error {
				_, err := ings.Ingresses(cur.Namespace).Update(ctx, cur, meta.UpdateOptions{})
				return err
			}, nil
		}
	}
	interval := time.Second / time.Duration(e.cfg.scaleRate)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var wg sync.WaitGroup
	t0 := time.Now()
	for j := 0; j < e.cfg.scaleChanges; j++ {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			op, host, ip, call, err := change(j)
			if err != nil {
				fail(fmt.Errorf("change %d: %w", j, err))
				return
			}
			if ok, _, _ := answers(ctx, s.addr, host, ip); ok {
				fail(fmt.Errorf("%s %s: answered before the change", op, host))
				return
			}
			clock.expect(host)
			// The DNS is polled from the same start as the informer's
			// clock, while the API call is in flight: a watch event (and
			// so an answer) can come before the call's own response, and
			// polling only after it would add the call's tail to ours
			// alone. The host was not answered before (checked above).
			start := time.Now()
			var apiD time.Duration
			called := make(chan error, 1)
			go func() {
				err := call()
				apiD = time.Since(start)
				called <- err
			}()
			for {
				qctx, qcancel := context.WithTimeout(ctx, 100*time.Millisecond)
				ok, _, _ := answers(qctx, s.addr, host, ip)
				qcancel()
				if ok {
					break
				}
				select {
				case err := <-called:
					if err != nil {
						fail(fmt.Errorf("%s %s: %w", op, host, err))
						return
					}
					called = nil // returned; a nil channel is never ready
				default:
				}
				if time.Since(start) > 30*time.Second {
					fail(fmt.Errorf("%s %s: not answered with %s within 30 s", op, host, ip))
					return
				}
				time.Sleep(time.Millisecond)
			}
			d := float64(time.Since(start).Microseconds()) / 1000
			if called != nil {
				if err := <-called; err != nil {
					fail(fmt.Errorf("%s %s: %w", op, host, err))
					return
				}
			}
			ictx, icancel := context.WithTimeout(ctx, 30*time.Second)
			seen, err := clock.arrival(ictx, host)
			icancel()
			if err != nil {
				fail(fmt.Errorf("%s %s: the bare informer: %w", op, host, err))
				return
			}
			di := float64(seen.Sub(start).Microseconds()) / 1000
			mu.Lock()
			informer = append(informer, di)
			excess = append(excess, d-di)
			byOp[op] = append(byOp[op], d)
			all = append(all, d)
			api = append(api, float64(apiD.Microseconds())/1000)
			watch = append(watch, d-float64(apiD.Microseconds())/1000)
			mu.Unlock()
		}()
	}
	wg.Wait()
	rate := float64(e.cfg.scaleChanges) / time.Since(t0).Seconds()
	for _, err := range errs {
		t.Error(err)
	}
	after, err := scrape(wctx, metrics)
	if err != nil {
		t.Fatal(err)
	}
	// A moved Ingress's old host is no longer answered.
	for _, i := range moved[:min(len(moved), 20)] {
		if ok, desc, err := answers(wctx, s.addr, e.host(i), e.ips[e.tenantOf(i)]); err != nil || ok {
			t.Errorf("%s is still answered after its Ingress moved to another target: %s %v", e.host(i), desc, err)
		}
	}
	s.proc.Stop()

	res.Scale.PropP50 = round(percentile(all, 50), 1)
	res.Scale.PropP99 = round(percentile(all, 99), 1)
	res.Scale.PropN = len(all)
	res.Scale.ChangesPerS = round(rate, 1)
	res.Scale.InformerPropP99 = round(percentile(informer, 99), 1)
	res.ScaleExtra["informer_propagation_p50_ms"] = round(percentile(informer, 50), 1)
	res.ScaleExtra["informer_propagation_max_ms"] = round(percentile(informer, 100), 1)
	res.ScaleExtra["prop_less_informer_p50_ms"] = round(percentile(excess, 50), 1)
	res.ScaleExtra["prop_less_informer_p99_ms"] = round(percentile(excess, 99), 1)
	res.ScaleExtra["prop_loadavg_end"] = loadAvg()
	for op, xs := range byOp {
		res.ScaleExtra["prop_"+op+"_n"] = len(xs)
		res.ScaleExtra["prop_"+op+"_p50_ms"] = round(percentile(xs, 50), 1)
		res.ScaleExtra["prop_"+op+"_p99_ms"] = round(percentile(xs, 99), 1)
	}
	res.ScaleExtra["prop_max_ms"] = round(percentile(all, 100), 1)
	res.ScaleExtra["prop_api_call_p50_ms"] = round(percentile(api, 50), 1)
	res.ScaleExtra["prop_api_call_p99_ms"] = round(percentile(api, 99), 1)
	res.ScaleExtra["prop_after_api_p50_ms"] = round(percentile(watch, 50), 1)
	res.ScaleExtra["prop_after_api_p99_ms"] = round(percentile(watch, 99), 1)
	// The collector's runs in CoreDNS over the changes, and what was
	// allocated: a run that meets a change stalls it by milliseconds.
	res.ScaleExtra["prop_gc_runs"] = metricSum(after, "go_gc_duration_seconds_count", nil) - metricSum(before, "go_gc_duration_seconds_count", nil)
	res.ScaleExtra["prop_alloc_mb"] = round((metricSum(after, "go_memstats_alloc_bytes_total", nil)-metricSum(before, "go_memstats_alloc_bytes_total", nil))/(1<<20), 1)
	hb, ha := histogram(before, "coredns_hairpin_index_update_delay_seconds"), histogram(after, "coredns_hairpin_index_update_delay_seconds")
	delta := make(map[float64]float64, len(ha))
	for le, c := range ha {
		delta[le] = c - hb[le]
	}
	if _, count := histogramQuantile(delta, 0.99); count > 0 {
		res.ScaleExtra["plugin_delay_events"] = count
		for _, q := range []float64{0.5, 0.99} {
			le, _ := histogramQuantile(delta, q)
			key := fmt.Sprintf("plugin_delay_p%.0f_le_ms", q*100)
			if math.IsInf(le, 1) {
				res.ScaleExtra[key] = "> 1000" // JSON has no +Inf
			} else {
				res.ScaleExtra[key] = round(le*1000, 2)
			}
		}
		res.ScaleExtra["plugin_delay_under_100ms"] = round(delta[0.1]/count, 4)
	}
	res.ScaleExtra["prop_method"] = fmt.Sprintf("%d changes at %d/s, open loop, cycling create / rename host / move to another target's class; clock from just before the API call to the first A answer with the right target's address, polled while the call is in flight; UDP poll every ~1 ms; %d Ingresses present. Beside it, in the same run, a bare client-go informer on Ingresses of every namespace (informer factory, protobuf, no transform) in the bench process: from the same start to the arrival of the first event that names the new host", e.cfg.scaleChanges, e.cfg.scaleRate, n)
	t.Logf("bench: scale propagation: %d changes at %.1f/s: p50 %.1f ms, p99 %.1f ms, max %.1f ms (API call p50 %.1f ms); the bare informer p50 %.1f ms, p99 %.1f ms; ours less the informer's per change p99 %.1f ms; plugin histogram p99 ≤ %v ms over %v events; %v GC runs, %v MiB allocated; load %s",
		len(all), rate, res.Scale.PropP50, res.Scale.PropP99, percentile(all, 100), percentile(api, 50), percentile(informer, 50), res.Scale.InformerPropP99, percentile(excess, 99), res.ScaleExtra["plugin_delay_p99_le_ms"], res.ScaleExtra["plugin_delay_events"], res.ScaleExtra["prop_gc_runs"], res.ScaleExtra["prop_alloc_mb"], loadAvg())
}

// eventClock is a bare client-go informer on the Ingresses of every
// namespace, built as an informer factory builds it (protobuf, as the plugin
// asks, no transform): the yardstick of the propagation figures. It records
// when the first event naming an expected host arrived.
type eventClock struct {
	mu   sync.Mutex
	want map[string]chan struct{}
	seen map[string]time.Time
}

// startEventClock starts the informer and waits for its first list.
func startEventClock(ctx context.Context, t *testing.T, k *kube) *eventClock {
	t.Helper()
	rc := rest.CopyConfig(k.cp.Config)
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	c := &eventClock{want: map[string]chan struct{}{}, seen: map[string]time.Time{}}
	f := informers.NewSharedInformerFactory(client, 0)
	inf := f.Networking().V1().Ingresses().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: c.saw, UpdateFunc: func(_, obj any) { c.saw(obj) }}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	f.Start(stop)
	t.Cleanup(func() { close(stop); f.Shutdown() })
	t0 := time.Now()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatalf("the bare informer did not sync: %v", ctx.Err())
	}
	t.Logf("bench: scale: the bare informer synced in %s", time.Since(t0).Round(time.Millisecond))
	return c
}

func (c *eventClock) saw(obj any) {
	now := time.Now()
	ing, ok := obj.(*networking.Ingress)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range ing.Spec.Rules {
		if ch, ok := c.want[r.Host]; ok {
			if _, done := c.seen[r.Host]; !done {
				c.seen[r.Host] = now
				close(ch)
			}
		}
	}
}

// expect registers host before the change that brings it is made.
func (c *eventClock) expect(host string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.want[host] = make(chan struct{})
}

// arrival is when the informer first saw host.
func (c *eventClock) arrival(ctx context.Context, host string) (time.Time, error) {
	c.mu.Lock()
	ch, ok := c.want[host]
	c.mu.Unlock()
	if !ok {
		return time.Time{}, fmt.Errorf("%s was not expected", host)
	}
	select {
	case <-ch:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.seen[host], nil
	case <-ctx.Done():
		return time.Time{}, fmt.Errorf("no event named %s: %w", host, ctx.Err())
	}
}
