package bench

import (
	"fmt"
	"strings"
)

// markdown renders results.md: the targets table first, then the detail.
func markdown(r *Results, failed bool) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	large := "10k"
	if r.Objects != 10000 {
		large = fmt.Sprintf("%d", r.Objects)
	}
	p("# coredns-hairpin benchmarks\n\n")
	if r.Quick {
		p("> **QUICK MODE** (BENCH_QUICK=1: one repetition, short durations, %d objects instead of 10,000). Smoke run only; the figures are not the recorded ones.\n\n", r.Objects)
	}
	if failed {
		p("> **FAILED RUN**: something broke (see the test log); figures may be missing (0).\n\n")
	}
	p("- date: %s\n", r.Date)
	p("- machine: %s\n", r.Machine)
	p("- command: `%s`\n", r.Command)
	p("- run time: %.0f s; every figure is the median of %d repetition(s), run interleaved (A, B, C, A, B, C, ...), except the proxy's (its method says how many, in which order)\n", r.DurationS, r.Repetitions)
	p("- benchmarks, not timed tests: a missed target is reported here, it does not fail `make bench`\n")
	for _, pr := range r.PartialRuns {
		p("- re-measured since, with the other figures kept: %s\n", pr)
	}
	p("\n")

	met := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	d := r.DNS
	pr := r.Proxy
	extraRSS := r.Memory.RSS10k - r.Memory.RSS0
	p("## Targets\n\n")
	p("| measure | ours | comparison | ratio | target | met |\n|---|---:|---:|---:|---|---|\n")
	row := func(measure, ours, cmp, rat, target string, ok bool) {
		p("| %s | %s | %s | %s | %s | %s |\n", measure, ours, cmp, rat, target, met(ok))
	}
	x := func(v float64) string { return fmt.Sprintf("%.2f×", v) }
	q := func(v float64) string { return fmt.Sprintf("%.0f", v) }
	rt := ratio(d.HairpinQPS10, d.HostsQPS10)
	row("DNS QPS, hairpin vs hosts, 10 hosts", q(d.HairpinQPS10)+" qps", "hosts "+q(d.HostsQPS10)+" qps", x(rt), "≥ 0.95×", rt >= 0.95)
	rt = ratio(d.HairpinQPS10k, d.HostsQPS10k)
	row("DNS QPS, hairpin vs hosts, "+large+" hosts", q(d.HairpinQPS10k)+" qps", "hosts "+q(d.HostsQPS10k)+" qps", x(rt), "≥ 0.95×", rt >= 0.95)
	rt = ratio(d.HairpinQPS10k, d.HairpinQPS10)
	row("DNS QPS, hairpin at "+large+" vs at 10", q(d.HairpinQPS10k)+" qps", "at 10: "+q(d.HairpinQPS10)+" qps", x(rt), "≥ 0.95×", rt >= 0.95)
	rt = ratio(d.HairpinQPS10k, d.RewriteQPS10k)
	row("DNS QPS, hairpin vs rewrite, at "+large, q(d.HairpinQPS10k)+" qps", "rewrite "+q(d.RewriteQPS10k)+" qps", x(rt), "≥ 30×", rt >= 30)
	row("propagation p99", fmt.Sprintf("%.1f ms", r.Propagation.P99), fmt.Sprintf("p50 %.1f ms, n = %d", r.Propagation.P50, r.Propagation.N), "", "< 100 ms", r.Propagation.P99 < 100 && r.Propagation.N > 0)
	row("extra RSS for "+large+" Ingresses", fmt.Sprintf("%.1f MiB", extraRSS), fmt.Sprintf("RSS %.1f MiB at 0, %.1f MiB at %s", r.Memory.RSS0, r.Memory.RSS10k, large), "", "< 20 MB", extraRSS < 20 && r.Memory.RSS10k > 0)
	rt = ratio(pr.OursRPSKeepalive, pr.HAProxyRPSKeepalive)
	row("proxy keep-alive req/s", q(pr.OursRPSKeepalive), fmt.Sprintf("HAProxy %s (direct %s)", q(pr.HAProxyRPSKeepalive), q(pr.DirectRPSKeepalive)), x(rt), "≥ 1.0× HAProxy", rt >= 1.0)
	rt = ratio(pr.OursCPS, pr.HAProxyCPS)
	row("proxy new connections/s", q(pr.OursCPS), fmt.Sprintf("HAProxy %s (direct %s)", q(pr.HAProxyCPS), q(pr.DirectCPS)), x(rt), "≥ 1.0× HAProxy", rt >= 1.0)
	rh, rd := ratio(pr.OursMBps, pr.HAProxyMBps), ratio(pr.OursMBps, pr.DirectMBps)
	row("proxy bulk MB/s", q(pr.OursMBps), fmt.Sprintf("HAProxy %s, direct %s", q(pr.HAProxyMBps), q(pr.DirectMBps)), fmt.Sprintf("%.2f× HAProxy, %.2f× direct", rh, rd), "≥ 1.0× HAProxy and ≥ 0.8× direct", rh >= 1.0 && rd >= 0.8)
	diff := pr.OursP99us - pr.DirectP99us
	row("proxy latency p99", q(pr.OursP99us)+" µs", fmt.Sprintf("direct %s µs (HAProxy %s µs)", q(pr.DirectP99us), q(pr.HAProxyP99us)), fmt.Sprintf("%+.0f µs vs direct", diff), "within 100 µs of direct", diff <= 100 && pr.OursP99us > 0)
	orderRows(r, row)
	scaleRows(r, row)
	keepaliveRows(r, row)
	rt = ratio(pr.OursRSSMB1kIdle, pr.HAProxyRSSMB1kIdle)
	row("proxy RSS with 1000 idle connections", fmt.Sprintf("%.1f MiB", pr.OursRSSMB1kIdle), fmt.Sprintf("HAProxy %.1f MiB", pr.HAProxyRSSMB1kIdle), x(rt), "≤ HAProxy's", rt <= 1.0 && pr.OursRSSMB1kIdle > 0)
	p("\n")

	p("## Further figures (no target)\n\n")
	p("| measure | ours | comparison |\n|---|---:|---:|\n")
	p("| time to first sync with %s Ingresses (coredns start → /ready 200) | %.2f s | with 0 Ingresses: %v s |\n", large, r.Memory.Sync10kS, r.MemExtra["sync_0_s"])
	p("| proxy RSS with no connections | %v MiB | HAProxy %v MiB |\n", r.ProxyExtra["ours_rss_mb_no_conns"], r.ProxyExtra["haproxy_rss_mb_no_conns"])
	p("| DNS QPS, rewrite at 10 hosts | %.0f qps | hosts %.0f qps |\n", d.RewriteQPS10, d.HostsQPS10)
	if q2, ok := r.DNSExtra["rewrite_2x_rules_qps_10k"].(float64); ok && q2 > 0 {
		p("| DNS QPS, hairpin at %s hosts vs rewrite with %v rules (2 per Ingress, the README's 20,000-rule configuration) | %.0f qps | rewrite %.0f qps: hairpin is %.1f× |\n", large, r.DNSExtra["rewrite_2x_rules"], d.HairpinQPS10k, q2, ratio(d.HairpinQPS10k, q2))
	}
	p("\n")

	p("## DNS detail\n\n")
	p("dnsperf `%v` per run against `bin/coredns`, one process and Corefile per case, no cache plugin. Latencies in µs from dnsperf's per-answer output (`-v`).\n", r.DNSExtra["dnsperf_args"])
	p("The large size has %s hosts, one per Ingress, so the rewrite case has %s `rewrite name exact` rules (the README's 20,000-rule figure is 10,000 Ingresses of 2 hosts). `rewrite2x` is that configuration: two rules per host queried.\n\n", large, large)
	p("| case | hosts | QPS | avg µs | p50 µs | p99 µs | runs (QPS) |\n|---|---:|---:|---:|---:|---:|---|\n")
	for _, size := range []string{"10", "10k"} {
		label := size
		if size == "10k" {
			label = large
		}
		for _, c := range []string{"hairpin", "hosts", "rewrite", "rewrite2x"} {
			k := c + "_" + size
			if _, ok := r.DNSLatency[k+"_avg"]; !ok {
				continue
			}
			q2, _ := r.DNSExtra["rewrite_2x_rules_qps_10k"].(float64)
			qps := map[string]float64{"hairpin_10": d.HairpinQPS10, "hosts_10": d.HostsQPS10, "rewrite_10": d.RewriteQPS10,
				"hairpin_10k": d.HairpinQPS10k, "hosts_10k": d.HostsQPS10k, "rewrite_10k": d.RewriteQPS10k, "rewrite2x_10k": q2}[k]
			p("| %s | %s | %.0f | %v | %v | %v | %v |\n", c, label, qps, r.DNSLatency[k+"_avg"], r.DNSLatency[k+"_p50"], r.DNSLatency[k+"_p99"], r.DNSExtra[k+"_qps_runs"])
		}
	}
	p("\n## Propagation detail\n\n")
	p("%v. %v Ingresses present.\n\n", r.PropExtra["method"], r.PropExtra["background_ingresses"])
	p("| change | n | p50 ms | p99 ms |\n|---|---:|---:|---:|\n")
	for _, op := range []string{"create", "update", "delete"} {
		p("| %s | %v | %v | %v |\n", op, r.PropExtra[op+"_n"], r.PropExtra[op+"_p50_ms"], r.PropExtra[op+"_p99_ms"])
	}
	p("| all | %d | %.1f | %.1f |\n", r.Propagation.N, r.Propagation.P50, r.Propagation.P99)
	p("\nAPI call alone (included above): p50 %v ms, p99 %v ms.\n", r.PropExtra["api_call_p50_ms"], r.PropExtra["api_call_p99_ms"])
	p("\n## Memory detail\n\n")
	p("%v. %v Ingresses with %v hosts (TLS section, cert-manager and 5 ingress-nginx annotations, Helm and app.kubernetes.io labels, 2 paths per rule).\n\n", r.MemExtra["method"], r.MemExtra["ingresses"], r.MemExtra["hosts"])
	p("| | RSS MiB | runs | Go heap in use MiB |\n|---|---:|---|---:|\n")
	p("| 0 Ingresses | %.1f | %v | %v |\n", r.Memory.RSS0, r.MemExtra["rss_0_runs"], r.MemExtra["heap_inuse_0_mb"])
	p("| %s Ingresses | %.1f | %v | %v |\n", large, r.Memory.RSS10k, r.MemExtra["rss_10k_runs"], r.MemExtra["heap_inuse_10k_mb"])
	p("\nTime to first sync runs: %v s; creating the Ingresses took %v s.\n", r.MemExtra["sync_10k_runs_s"], r.MemExtra["create_10k_s"])
	p("\n## Proxy detail\n\n")
	p("%v. All three paths end at the same nginx (proxy_protocol listener for ours and HAProxy, a plain listener for direct).\n\n", r.ProxyExtra["method"])
	p("| path | keep-alive req/s | new conn/s | MB/s | p50 µs (c1) | p99 µs (c1) | keep-alive c32 p50 / p99 µs | RSS MiB, %v idle conns |\n|---|---:|---:|---:|---:|---:|---|---:|\n", r.ProxyExtra["idle_conns"])
	p("| ours | %.0f | %.0f | %.0f | %v | %.0f | %v / %v | %.1f |\n", pr.OursRPSKeepalive, pr.OursCPS, pr.OursMBps, r.ProxyExtra["ours_p50_us"], pr.OursP99us, r.ProxyExtra["ours_keepalive_c32_p50_us"], r.ProxyExtra["ours_keepalive_c32_p99_us"], pr.OursRSSMB1kIdle)
	p("| HAProxy | %.0f | %.0f | %.0f | %v | %.0f | %v / %v | %.1f |\n", pr.HAProxyRPSKeepalive, pr.HAProxyCPS, pr.HAProxyMBps, r.ProxyExtra["haproxy_p50_us"], pr.HAProxyP99us, r.ProxyExtra["haproxy_keepalive_c32_p50_us"], r.ProxyExtra["haproxy_keepalive_c32_p99_us"], pr.HAProxyRSSMB1kIdle)
	p("| direct | %.0f | %.0f | %.0f | %v | %.0f | %v / %v | |\n", pr.DirectRPSKeepalive, pr.DirectCPS, pr.DirectMBps, r.ProxyExtra["direct_p50_us"], pr.DirectP99us, r.ProxyExtra["direct_keepalive_c32_p50_us"], r.ProxyExtra["direct_keepalive_c32_p99_us"])
	p("\nRuns: ours keep-alive %v, HAProxy %v, direct %v; new conn/s ours %v, HAProxy %v, direct %v; MB/s ours %v, HAProxy %v, direct %v.\n",
		r.ProxyExtra["ours_rps_keepalive_runs"], r.ProxyExtra["haproxy_rps_keepalive_runs"], r.ProxyExtra["direct_rps_keepalive_runs"],
		r.ProxyExtra["ours_cps_runs"], r.ProxyExtra["haproxy_cps_runs"], r.ProxyExtra["direct_cps_runs"],
		r.ProxyExtra["ours_mbps_runs"], r.ProxyExtra["haproxy_mbps_runs"], r.ProxyExtra["direct_mbps_runs"])
	p("\nCPU time of the proxy process (user + system, /proc/PID/stat) per unit of work, medians; unlike req/s it barely moves when other work shares the machine:\n\n")
	p("| path | µs per keep-alive request | µs per new connection | µs per request (c1) | ms per GB bulk |\n|---|---:|---:|---:|---:|\n")
	for _, name := range []string{"ours", "haproxy"} {
		e := r.ProxyExtra
		p("| %s | %v | %v | %v | %v |\n", name, e[name+"_keepalive_cpu_us_per_req"], e[name+"_conn_per_req_cpu_us_per_req"], e[name+"_latency_cpu_us_per_req"], e[name+"_bulk_ms_per_GB_cpu"])
	}
	// []string from this run, []any when read back from results.json.
	var la []any
	switch v := r.ProxyExtra["loadavg"].(type) {
	case []string:
		for _, s := range v {
			la = append(la, s)
		}
	case []any:
		la = v
	}
	if len(la) == 2 {
		p("\nLoad average (1, 5, 15 min) on this 2-core machine: %v at the start of the proxy phase, %v at its end.\n", la[0], la[1])
	}
	if run, ok := r.ProxyExtra["run"]; ok {
		p("\n%v\n", run)
	}
	b.WriteString(keepaliveDetail(r))
	b.WriteString(scaleDetail(r))
	return b.String()
}

// ratio is a/b, and 0 when b is (a figure that was not measured).
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
