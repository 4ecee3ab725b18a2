package bench

import (
	"fmt"
	"strings"
)

// scaleRows are the scale phase's lines of the targets table; row is the
// table's row printer, ok-marking included. Nothing when the phase has not
// run.
func scaleRows(r *Results, row func(measure, ours, cmp, rat, target string, ok bool)) {
	sc := r.Scale
	if sc.Ingresses == 0 {
		return
	}
	large := fmt.Sprintf("%s hosts / %d targets", count(sc.Hosts), sc.Targets)
	goLarge := fmt.Sprintf("%s hosts / %v targets", countAny(r.ScaleExtra["go_hosts"]), r.ScaleExtra["go_targets"])
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	rt := ratio(sc.HitNsLarge, sc.HitNsSmall)
	row("scale: hit path CPU ns/op, "+goLarge+" vs 10 hosts / 1 target (names spread over the index)", fmt.Sprintf("%.0f ns", sc.HitNsLarge), fmt.Sprintf("%.0f ns", sc.HitNsSmall), fmt.Sprintf("%.2f×", rt), "≤ 1.2×", rt <= 1.2 && rt > 0)
	rt = ratio(sc.RepeatNsLarge, sc.RepeatNsSmall)
	row("scale: hit path CPU ns/op, "+goLarge+" vs 10 hosts / 1 target (one name)", fmt.Sprintf("%.0f ns", sc.RepeatNsLarge), fmt.Sprintf("%.0f ns", sc.RepeatNsSmall), fmt.Sprintf("%.2f×", rt), "≤ 1.2×", rt <= 1.2 && rt > 0)
	rt = ratio(sc.QPSLarge, sc.QPSSmall)
	row("scale: DNS QPS of bin/coredns, "+large+" vs 10 hosts / 1 target", fmt.Sprintf("%.0f qps", sc.QPSLarge), fmt.Sprintf("%.0f qps", sc.QPSSmall), fmt.Sprintf("%.2f×", rt), "≥ 0.83× (1/1.2)", rt >= 1/1.2)
	row(fmt.Sprintf("scale: extra RSS for %s Ingresses, stock kubeadm Corefile", count(sc.Ingresses)), fmt.Sprintf("%.1f MiB", sc.ExtraRSS), fmt.Sprintf("RSS %.1f MiB with none", sc.RSS0), "", "< 100 MiB", sc.ExtraRSS < 100 && sc.RSS > 0)
	row(fmt.Sprintf("scale: whole RSS with %s Ingresses, stock kubeadm Corefile", count(sc.Ingresses)), fmt.Sprintf("%.1f MiB", sc.RSS), "kubeadm's limits.memory 170Mi", "", "≤ 170 MiB", sc.RSS <= 170 && sc.RSS > 0)
	row(fmt.Sprintf("scale: first sync, %s Ingresses (start → every host served)", count(sc.Ingresses)), fmt.Sprintf("%.2f s", sc.SyncS), fmt.Sprintf("start → /ready %v s", r.ScaleExtra["ready_s"]), "", "< 10 s", sc.SyncS < 10 && sc.SyncS > 0)
	row(fmt.Sprintf("scale: propagation p99 at %.1f changes/s", sc.ChangesPerS), fmt.Sprintf("%.1f ms", sc.PropP99), fmt.Sprintf("p50 %.1f ms, n = %d; plugin histogram p99 ≤ %v ms", sc.PropP50, sc.PropN, r.ScaleExtra["plugin_delay_p99_le_ms"]), "", "< 100 ms", sc.PropP99 < 100 && sc.PropN > 0)
	row("scale: propagation p99, ours vs a bare client-go informer in the same run", fmt.Sprintf("%.1f ms", sc.PropP99), fmt.Sprintf("informer %.1f ms", sc.InformerPropP99), fmt.Sprintf("%+.1f ms", sc.PropP99-sc.InformerPropP99), "≤ informer's + 5 ms", sc.InformerPropP99 > 0 && sc.PropP99 <= sc.InformerPropP99+5)
}

// scaleDetail is the scale phase's section of results.md.
func scaleDetail(r *Results) string {
	sc := r.Scale
	if sc.Ingresses == 0 {
		return ""
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	x := r.ScaleExtra
	p("\n## Scale detail (issue 11)\n\n")
	p("%s production-shaped Ingresses (as in the memory phase) of 2 hosts each, %s hosts, spread evenly over %d targets: one target Service, IngressClass, zone (`tenant-NNN.example.com`) and namespace per tenant, as Cozystack runs one ingress controller per tenant. Own control plane; `bin/coredns` with hairpin discovering targets in `hairpin-system`. The 10-host case is a second `bin/coredns` on the same apiserver that discovers one target in its own namespace and watches only its own 5 Ingresses.\n\n", count(sc.Ingresses), count(sc.Hosts), sc.Targets)
	p("Run at %v on %v, %v s; load average (1, 5, 15 min) %v at the start, %v at the end (the machine is shared).\n\n", x["date"], x["machine"], x["duration_s"], x["loadavg_start"], x["loadavg_end"])
	p("| measure | %s hosts / %d targets | 10 hosts / 1 target | runs |\n|---|---:|---:|---|\n", count(sc.Hosts), sc.Targets)
	p("| ServeDNS hit CPU ns/op, names spread (Go benchmark at %s hosts / %v targets) | %.0f | %.0f | %v / %v |\n", countAny(x["go_hosts"]), x["go_targets"], sc.HitNsLarge, sc.HitNsSmall, x["go_ns_runs_spread_large"], x["go_ns_runs_spread_small"])
	p("| ServeDNS hit CPU ns/op, one name (same) | %.0f | %.0f | %v / %v |\n", sc.RepeatNsLarge, sc.RepeatNsSmall, x["go_ns_runs_repeat_large"], x["go_ns_runs_repeat_small"])
	p("| wall-clock ns/op, names spread / one name (waits for a core included) | %v / %v | %v / %v | |\n", x["go_wall_ns_spread_large"], x["go_wall_ns_repeat_large"], x["go_wall_ns_spread_small"], x["go_wall_ns_repeat_small"])
	p("| the same %s hosts on 1 target: names spread / one name | %v / %v | | %v / %v |\n", countAny(x["go_hosts"]), x["go_ns_spread_onetarget"], x["go_ns_repeat_onetarget"], x["go_ns_runs_spread_onetarget"], x["go_ns_runs_repeat_onetarget"])
	p("| dnsperf QPS | %.0f | %.0f | %v / %v |\n", sc.QPSLarge, sc.QPSSmall, x["qps_large_runs"], x["qps_small_runs"])
	p("| dnsperf p99 µs | %v | %v | |\n\n", x["dns_p99_us_large"], x["dns_p99_us_small"])
	p("Go benchmark: %v.\n\n", x["go_method"])
	p("Memory: %v; %v. RSS with none %v MiB, with the Ingresses %v MiB (Go heap in use %v MiB; peak RSS, VmHWM, during the first sync %v MiB, runs %v). Ready (start → /ready) %v s, runs %v; every host served %v s, CoreDNS CPU time by then %v s (runs %v).\n\n", x["memory_corefile"], x["memory_method"], x["rss_0_runs"], x["rss_runs"], x["heap_inuse_mb"], x["peak_rss_mb"], x["peak_rss_runs"], x["ready_s"], x["ready_runs_s"], x["sync_runs_s"], x["sync_cpu_s"], x["sync_cpu_runs_s"])
	p("Creating the Ingresses took %v s (%v per second, %d concurrent writers, protobuf).\n\n", x["create_s"], x["create_per_s"], workers)
	p("Propagation: %v.\n\n", x["prop_method"])
	p("| change | n | p50 ms | p99 ms |\n|---|---:|---:|---:|\n")
	for _, op := range []string{"create", "rename", "move"} {
		p("| %s | %v | %v | %v |\n", op, x["prop_"+op+"_n"], x["prop_"+op+"_p50_ms"], x["prop_"+op+"_p99_ms"])
	}
	p("| all | %d | %.1f | %.1f |\n", sc.PropN, sc.PropP50, sc.PropP99)
	p("| a bare client-go informer, the same changes | %d | %v | %.1f |\n\n", sc.PropN, x["informer_propagation_p50_ms"], sc.InformerPropP99)
	p("Ours less the informer's, per change: p50 %v ms, p99 %v ms. CoreDNS over the changes: %v GC runs, %v MiB allocated. Load average at the end of the propagation run: %v.\n\n", x["prop_less_informer_p50_ms"], x["prop_less_informer_p99_ms"], x["prop_gc_runs"], x["prop_alloc_mb"], x["prop_loadavg_end"])
	p("API call alone (included above): p50 %v ms, p99 %v ms; from the API's answer to CoreDNS's: p50 %v ms, p99 %v ms; max %v ms. The plugin's coredns_hairpin_index_update_delay_seconds over the same changes: %v events, p50 ≤ %v ms, p99 ≤ %v ms (bucket bounds), %v under 100 ms.\n",
		x["prop_api_call_p50_ms"], x["prop_api_call_p99_ms"], x["prop_after_api_p50_ms"], x["prop_after_api_p99_ms"], x["prop_max_ms"], x["plugin_delay_events"], x["plugin_delay_p50_le_ms"], x["plugin_delay_p99_le_ms"], x["plugin_delay_under_100ms"])
	return b.String()
}

// count writes n with thin thousands separators: 200,000.
func count(n int) string {
	s := fmt.Sprintf("%d", n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// countAny is count for a figure of the *_extra maps: an int when measured,
// a float64 when read back from results.json.
func countAny(v any) string {
	switch n := v.(type) {
	case int:
		return count(n)
	case float64:
		return count(int(n))
	}
	return fmt.Sprint(v)
}
