package bench

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// dnsperfArgs: one dnsperf thread with 4 sockets and 100 queries in flight
// saturates CoreDNS on this 2-core machine while leaving it most of the CPU
// (dnsperf and coredns share the 2 cores). -v prints every answer with its
// latency, from which the p99 is computed (dnsperf 2.10 has no histogram).
var dnsperfArgs = []string{"-c", "4", "-T", "1", "-q", "100", "-t", "5", "-v"}

// coreDNS is one running bin/coredns with its own Corefile and address.
type coreDNS struct {
	name      string
	proc      *harness.Process
	ip        string
	port      int
	addr      string // ip:port
	readyAddr string // ready plugin, when configured
	pprofAddr string // pprof plugin, when configured
	corefile  string
}

// coreDNSSpec builds a Corefile for an address: body gets the server's
// "ip", "port", "ready" and "pprof" addresses.
type coreDNSSpec struct {
	name     string
	ready    bool
	pprof    bool
	activate bool // the image's activation on (a stock Corefile that names no hairpin)
	body     func(ip string, port int, ready, pprof string) string
}

func startCoreDNS(t *testing.T, bin string, spec coreDNSSpec) *coreDNS {
	t.Helper()
	ip := harness.FreeLoopbackIP(t).String()
	s := &coreDNS{name: spec.name, ip: ip, port: harness.FreePort(t, ip)}
	s.addr = fmt.Sprintf("%s:%d", ip, s.port)
	if spec.ready {
		s.readyAddr = harness.FreeAddr(t, "127.0.0.1")
	}
	if spec.pprof {
		s.pprofAddr = harness.FreeAddr(t, "127.0.0.1")
	}
	dir := t.TempDir()
	s.corefile = harness.WriteFile(t, dir, "Corefile", spec.body(ip, s.port, s.readyAddr, s.pprofAddr))
	// Activation off unless asked for: each case measures the Corefile
	// exactly as written (the rewrite cases hold kubernetes;
	// activation_test.go measures activation on its own).
	args := []string{"-conf", s.corefile}
	if !spec.activate {
		args = append(args, "-hairpin.activate=false")
	}
	s.proc = harness.StartProcess(t, "coredns-"+spec.name, bin, args...)
	return s
}

// waitServing waits until the server answers anything (and /ready, if any).
func (s *coreDNS) waitServing(ctx context.Context) error {
	if s.readyAddr != "" {
		if err := s.proc.Ready(ctx, harness.HTTPProbe("http://"+s.readyAddr+"/ready")); err != nil {
			return fmt.Errorf("%s not ready: %w", s.name, err)
		}
	}
	if err := s.proc.Ready(ctx, harness.DNSProbe(s.addr, "example.com.", dns.TypeA)); err != nil {
		return fmt.Errorf("%s not serving: %w", s.name, err)
	}
	return nil
}

// answers reports whether the server answers name/A with exactly ip.
func answers(ctx context.Context, addr, name, ip string) (bool, string, error) {
	r, err := harness.Exchange(ctx, addr, dns.Fqdn(name), dns.TypeA)
	if err != nil {
		return false, "", err
	}
	got := harness.ARecords(r)
	desc := fmt.Sprintf("%s %v", dns.RcodeToString[r.Rcode], got)
	return r.Rcode == dns.RcodeSuccess && len(got) == 1 && got[0].String() == ip, desc, nil
}

// checkAnswers queries a sample of hosts (first, last, random ones) and fails
// unless every one is answered with the proxy IP.
func checkAnswers(ctx context.Context, s *coreDNS, n int, host func(int) string, ip string) error {
	return checkTargets(ctx, s, n, host, func(int) string { return ip })
}

// checkTargets is checkAnswers when host i has its own target address ip(i).
func checkTargets(ctx context.Context, s *coreDNS, n int, host, ip func(int) string) error {
	idx := []int{0, n - 1}
	for i := 0; i < 30; i++ {
		idx = append(idx, rand.IntN(n))
	}
	for _, i := range idx {
		ok, desc, err := answers(ctx, s.addr, host(i), ip(i))
		if err != nil {
			return fmt.Errorf("%s: %s: %w", s.name, host(i), err)
		}
		if !ok {
			return fmt.Errorf("%s: %s A: got %s, want %s", s.name, host(i), desc, ip(i))
		}
	}
	return nil
}

type dnsperfResult struct {
	QPS       float64
	AvgUS     float64
	P50US     float64
	P99US     float64
	Sent      int
	Completed int
	Lost      int
	Rcodes    map[string]int
}

// runDNSPerf runs dnsperf against addr for d and parses its summary and its
// per-answer latencies.
func runDNSPerf(ctx context.Context, ip string, port int, queries string, d time.Duration, outDir, label string) (dnsperfResult, error) {
	args := append([]string{"-s", ip, "-p", strconv.Itoa(port), "-d", queries, "-l", strconv.Itoa(int(d.Seconds()))}, dnsperfArgs...)
	ctx, cancel := context.WithTimeout(ctx, d+60*time.Second)
	defer cancel()
	out, err := run(ctx, "dnsperf", args...)
	if err != nil {
		return dnsperfResult{}, err
	}
	_ = os.WriteFile(filepath.Join(outDir, label+".dnsperf.txt"), []byte(summaryOnly(out)), 0o644)
	return parseDNSPerf(out)
}

func summaryOnly(out string) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "> ") {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func parseDNSPerf(out string) (dnsperfResult, error) {
	r := dnsperfResult{Rcodes: map[string]int{}}
	var lat []float64
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	num := func(s string) float64 {
		f, _ := strconv.ParseFloat(strings.TrimSuffix(s, ","), 64)
		return f
	}
	for sc.Scan() {
		l := sc.Text()
		f := strings.Fields(l)
		switch {
		case strings.HasPrefix(l, "> ") && len(f) == 5:
			r.Rcodes[f[1]]++
			lat = append(lat, num(f[4])*1e6)
		case strings.HasPrefix(strings.TrimSpace(l), "Queries sent:") && len(f) >= 3:
			r.Sent = int(num(f[2]))
		case strings.HasPrefix(strings.TrimSpace(l), "Queries completed:") && len(f) >= 3:
			r.Completed = int(num(f[2]))
		case strings.HasPrefix(strings.TrimSpace(l), "Queries lost:") && len(f) >= 3:
			r.Lost = int(num(f[2]))
		case strings.HasPrefix(strings.TrimSpace(l), "Queries per second:") && len(f) >= 4:
			r.QPS = num(f[3])
		case strings.HasPrefix(strings.TrimSpace(l), "Average Latency (s):") && len(f) >= 4:
			r.AvgUS = num(f[3]) * 1e6
		}
	}
	if err := sc.Err(); err != nil {
		return r, err
	}
	if r.QPS == 0 || r.Completed == 0 {
		return r, fmt.Errorf("dnsperf: no queries completed:\n%s", tail(summaryOnly(out), 3000))
	}
	r.P50US = percentile(lat, 50)
	r.P99US = percentile(lat, 99)
	return r, nil
}

// queryFile writes a dnsperf input with the names of all n hosts spread
// evenly (at least 10,000 lines), shuffled, A queries.
func queryFile(t *testing.T, dir string, n int, host func(int) string) string {
	lines := max(n, 10000)
	names := make([]string, lines)
	for i := range names {
		names[i] = host(i % n)
	}
	rand.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	var b strings.Builder
	for _, name := range names {
		b.WriteString(name)
		b.WriteString(" A\n")
	}
	return harness.WriteFile(t, dir, fmt.Sprintf("queries-%d.txt", n), b.String())
}

// benchDNS measures dnsperf throughput of the three Corefiles at the small
// and at the large size, interleaved.
func benchDNS(t *testing.T, cfg config, bin map[string]string, k *kube, res *Results) {
	profDir := os.Getenv(EnvProfileDir)
	for _, size := range []int{cfg.small, cfg.objects} {
		label := strconv.Itoa(size)
		if size == 10000 {
			label = "10k"
		}
		key := label
		if size == cfg.objects {
			key = "10k" // the schema's "10k" is the large size (1,000 in quick mode)
		}
		ok := t.Run("hosts_"+label, func(t *testing.T) {
			ctx := t.Context()
			start := time.Now()
			if err := k.createN(ctx, size, dnsIngress); err != nil {
				t.Fatal(err)
			}
			t.Logf("bench: %d one-host Ingresses present (%s)", size, time.Since(start).Round(time.Millisecond))
			dir := t.TempDir()
			var hosts, rewrites strings.Builder
			for i := 0; i < size; i++ {
				fmt.Fprintf(&hosts, "%s %s\n", k.proxyIP, dnsHost(i))
				fmt.Fprintf(&rewrites, "    rewrite name exact %s %s.%s.svc.cluster.local\n", dnsHost(i), proxyName, proxyNS)
			}
			hostsFile := harness.WriteFile(t, dir, "hosts", hosts.String())
			// At the large size, also the configuration of the 20,000-rule
			// figure (README.md): two rules per Ingress (a second host each, never
			// queried, interleaved), so a query scans twice as many rules.
			var rewrites2 strings.Builder
			for i := 0; i < size; i++ {
				fmt.Fprintf(&rewrites2, "    rewrite name exact %s %s.%s.svc.cluster.local\n", dnsHost(i), proxyName, proxyNS)
				fmt.Fprintf(&rewrites2, "    rewrite name exact www-%s %s.%s.svc.cluster.local\n", dnsHost(i), proxyName, proxyNS)
			}
			extra := func(ready, pprof string) string {
				s := ""
				if ready != "" {
					s += "    ready " + ready + "\n"
				}
				if pprof != "" {
					s += "    pprof " + pprof + "\n"
				}
				return s
			}
			// No cache plugin anywhere: the answering plugin itself is measured.
			specs := []coreDNSSpec{
				{name: "hairpin", ready: true, pprof: profDir != "", body: func(ip string, port int, ready, pprof string) string {
					return fmt.Sprintf("example.com:%d {\n    bind %s\n%s    hairpin {\n        kubeconfig %s\n    }\n}\n", port, ip, extra(ready, pprof), k.cp.Kubeconfig)
				}},
				{name: "hosts", pprof: profDir != "", body: func(ip string, port int, ready, pprof string) string {
					return fmt.Sprintf("example.com:%d {\n    bind %s\n%s    hosts %s\n}\n", port, ip, extra(ready, pprof), hostsFile)
				}},
				{name: "rewrite", ready: true, pprof: profDir != "", body: func(ip string, port int, ready, pprof string) string {
					return fmt.Sprintf(".:%d {\n    bind %s\n%s%s    kubernetes cluster.local {\n        kubeconfig %s\n    }\n}\n", port, ip, extra(ready, pprof), rewrites.String(), k.cp.Kubeconfig)
				}},
			}
			if size == cfg.objects {
				specs = append(specs, coreDNSSpec{name: "rewrite2x", ready: true, body: func(ip string, port int, ready, pprof string) string {
					return fmt.Sprintf(".:%d {\n    bind %s\n%s%s    kubernetes cluster.local {\n        kubeconfig %s\n    }\n}\n", port, ip, extra(ready, ""), rewrites2.String(), k.cp.Kubeconfig)
				}})
			}
			servers := make([]*coreDNS, len(specs))
			for i, spec := range specs {
				servers[i] = startCoreDNS(t, bin["coredns"], spec)
			}
			wctx, cancel := context.WithTimeout(ctx, 120*time.Second)
			defer cancel()
			for _, s := range servers {
				if err := s.waitServing(wctx); err != nil {
					t.Fatal(err)
				}
			}
			// Every server must answer the hosts with the proxy IP before
			// it is measured. The hairpin index is complete once /ready
			// says so, but poll briefly to be safe.
			for _, s := range servers {
				err := harness.Poll(wctx, func(ctx context.Context) error { return checkAnswers(ctx, s, size, dnsHost, k.proxyIP) })
				if err != nil {
					t.Fatal(err)
				}
			}
			qf := queryFile(t, dir, size, dnsHost)
			// Warm-up, not recorded: one second of load per server.
			for _, s := range servers {
				if _, err := runDNSPerf(ctx, s.ip, s.port, qf, time.Second, dir, s.name+"-warmup"); err != nil {
					t.Fatalf("%s warm-up: %v", s.name, err)
				}
			}
			qps := map[string][]float64{}
			avg := map[string][]float64{}
			p99 := map[string][]float64{}
			p50 := map[string][]float64{}
			for rep := 0; rep < cfg.reps; rep++ {
				for _, s := range servers {
					var prof chan error
					if profDir != "" && rep == 0 && size == cfg.objects && s.name != "rewrite" {
						prof = make(chan error, 1)
						go func() {
							secs := max(int(cfg.dnsDur.Seconds())-2, 1)
							b, code, err := httpGet(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.pprofAddr, secs))
							if err == nil && code != 200 {
								err = fmt.Errorf("pprof: HTTP %d", code)
							}
							if err == nil {
								err = os.WriteFile(filepath.Join(profDir, fmt.Sprintf("coredns-%s-%s.cpu.pprof", s.name, label)), b, 0o644)
							}
							prof <- err
						}()
					}
					r, err := runDNSPerf(ctx, s.ip, s.port, qf, cfg.dnsDur, dir, fmt.Sprintf("%s-%s-%d", s.name, label, rep))
					if err != nil {
						t.Fatalf("%s at %d hosts: %v", s.name, size, err)
					}
					if prof != nil {
						if err := <-prof; err != nil {
							t.Logf("bench: profile of %s: %v", s.name, err)
						}
					}
					t.Logf("bench: dns %-7s %6s hosts rep %d: %8.0f qps, avg %6.0f us, p50 %6.0f us, p99 %6.0f us, sent %d, lost %d, rcodes %v",
						s.name, label, rep, r.QPS, r.AvgUS, r.P50US, r.P99US, r.Sent, r.Lost, r.Rcodes)
					bad := r.Completed - r.Rcodes["NOERROR"]
					if bad != 0 || len(r.Rcodes) != 1 {
						t.Fatalf("%s at %d hosts: %d answers were not NOERROR: %v", s.name, size, bad, r.Rcodes)
					}
					if r.Lost*100 > r.Sent {
						t.Fatalf("%s at %d hosts: %d of %d queries lost", s.name, size, r.Lost, r.Sent)
					}
					qps[s.name] = append(qps[s.name], r.QPS)
					avg[s.name] = append(avg[s.name], r.AvgUS)
					p50[s.name] = append(p50[s.name], r.P50US)
					p99[s.name] = append(p99[s.name], r.P99US)
				}
			}
			// The answers must still be right after the load.
			cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
			defer ccancel()
			for _, s := range servers {
				if err := checkAnswers(cctx, s, size, dnsHost, k.proxyIP); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range servers {
				q := round(median(qps[s.name]), 0)
				switch s.name + "_" + key {
				case "hairpin_10k":
					res.DNS.HairpinQPS10k = q
				case "hosts_10k":
					res.DNS.HostsQPS10k = q
				case "rewrite_10k":
					res.DNS.RewriteQPS10k = q
				case "rewrite2x_10k":
					res.DNSExtra["rewrite_2x_rules_qps_10k"] = q
					res.DNSExtra["rewrite_2x_rules"] = 2 * size
				}
				if size == cfg.small {
					switch s.name {
					case "hairpin":
						res.DNS.HairpinQPS10 = q
					case "hosts":
						res.DNS.HostsQPS10 = q
					case "rewrite":
						res.DNS.RewriteQPS10 = q
					}
				}
				sk := s.name + "_" + key
				if size == cfg.small {
					sk = s.name + "_10"
				}
				res.DNSLatency[sk+"_avg"] = round(median(avg[s.name]), 0)
				res.DNSLatency[sk+"_p50"] = round(median(p50[s.name]), 0)
				res.DNSLatency[sk+"_p99"] = round(median(p99[s.name]), 0)
				res.DNSExtra[sk+"_qps_runs"] = roundAll(qps[s.name], 0)
			}
			res.DNSExtra["hosts_large"] = cfg.objects
			res.DNSExtra["dnsperf_args"] = strings.Join(append([]string{"-l", strconv.Itoa(int(cfg.dnsDur.Seconds()))}, dnsperfArgs...), " ")
			for _, s := range servers {
				s.proc.Stop()
			}
		})
		if !ok {
			return
		}
	}
}

func roundAll(xs []float64, digits int) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = round(x, digits)
	}
	return out
}
