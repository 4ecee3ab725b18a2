package bench

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// KeepaliveCost is the keep-alive cost phase (issue 45): what one keep-alive
// request costs each proxy, in system calls and in CPU time, on one thread
// each, for the same fixed number of requests. Unlike req/s these barely
// move when other work shares the machine.
type KeepaliveCost struct {
	Method string `json:"method"`
	// HAProxyConfig is HAProxy's configuration file, with the addresses
	// left as LISTEN and UPSTREAM.
	HAProxyConfig string `json:"haproxy_config"`
	// OursEnv is what our proxy runs with: one event loop.
	OursEnv      string               `json:"ours_env"`
	Requests     int                  `json:"requests_per_run"`
	Connections  int                  `json:"connections"`
	CountRuns    int                  `json:"syscall_runs"`
	CPURuns      int                  `json:"cpu_runs"`
	Paths        map[string]*PathCost `json:"paths"`
	SyscallRatio float64              `json:"ours_haproxy_syscall_ratio"`
	CPURatio     float64              `json:"ours_haproxy_cpu_ratio"`
	Alts         map[string]string    `json:"alt_binaries,omitempty"`
	Loadavg      []string             `json:"loadavg"`
	Date         string               `json:"date"`
}

// PathCost is one proxy's cost per keep-alive request.
type PathCost struct {
	// Syscalls is every system call per request, the median of the
	// counting runs; SyscallsByName splits it (the median run's counts).
	Syscalls       float64            `json:"syscalls_per_req"`
	SyscallsByName map[string]float64 `json:"syscalls_per_req_by_name"`
	SyscallRuns    []float64          `json:"syscalls_per_req_runs"`
	// EpollWaits is epoll_wait, epoll_pwait and epoll_pwait2 together.
	EpollWaits float64 `json:"epoll_waits_per_req"`
	// EAGAINReads is the read and recvfrom calls that returned EAGAIN.
	EAGAINReads float64 `json:"eagain_reads_per_req"`
	// CPUus is the process's user + system time per request, in µs, the
	// median of the interleaved runs without perf.
	CPUus     float64   `json:"cpu_us_per_req"`
	CPUusRuns []float64 `json:"cpu_us_per_req_runs"`
	// RPS is wrk's req/s in those runs, for reference: it swings with the
	// machine's other load.
	RPS     float64   `json:"rps"`
	RPSRuns []float64 `json:"rps_runs"`
}

// EnvKeepaliveRuns, when set, is how many interleaved CPU runs the
// keep-alive cost phase makes of each proxy (default 6): CPU per request
// swings with the machine's other load, and more runs steady the median.
const EnvKeepaliveRuns = "BENCH_KEEPALIVE_RUNS"

// keepaliveRequests is how many requests one run serves.
func (c config) keepaliveRequests() int {
	if c.quick {
		return 40_000
	}
	return 200_000
}

// benchKeepalive measures KeepaliveCost: ours with GOMAXPROCS=1 (one event
// loop) and HAProxy with nbthread 1, both in front of the same nginx,
// keep-alive wrk load of a fixed number of requests. First the system
// calls, counted by perf in runs of their own (tracepoints slow every call
// down a little), then CPU time in interleaved runs without perf.
func benchKeepalive(t *testing.T, cfg config, bin map[string]string, res *Results) {
	ctx := t.Context()
	kc := &KeepaliveCost{
		HAProxyConfig: haproxyConfig(1, "LISTEN", "UPSTREAM"),
		OursEnv:       "GOMAXPROCS=1",
		Requests:      cfg.keepaliveRequests(),
		Connections:   wrkConns,
		CountRuns:     3,
		CPURuns:       6,
		Paths:         map[string]*PathCost{},
		Date:          time.Now().UTC().Format(time.RFC3339),
		Loadavg:       []string{loadAvg()},
	}
	if cfg.quick {
		kc.CountRuns, kc.CPURuns = 1, 2
	}
	if n, err := strconv.Atoi(os.Getenv(EnvKeepaliveRuns)); err == nil && n > 0 {
		kc.CPURuns = n
	}
	res.ProxyKeepalive = kc
	defer func() { kc.Loadavg = append(kc.Loadavg, loadAvg()) }()
	ngx := harness.StartNginx(t, harness.NginxOptions{PlainListeners: true, Workers: nginxWorkers})
	paths := []proxyPath{
		startOurProxyEnv(t, []string{kc.OursEnv}, bin["proxy"], ngx.HTTPAddr),
		startHAProxy(t, ngx.HTTPAddr, 1),
	}
	alts := altBinaries()
	for _, name := range slices.Sorted(maps.Keys(alts)) {
		p := startOurProxyEnv(t, []string{kc.OursEnv}, alts[name], ngx.HTTPAddr)
		p.name = name
		paths = append(paths, p)
	}
	kc.Alts = alts
	script := harness.WriteFile(t, t.TempDir(), "stop.lua", wrkStopScript)
	dir := t.TempDir()
	// At most this long per run: a tenth of the usual req/s.
	limit := time.Duration(kc.Requests/5000+10) * time.Second
	serve := func(p proxyPath) wrkResult {
		r, out, err := runWrkN(ctx, p.url("/"), script, wrkConns, kc.Requests, limit)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if r.Non2xx > 0 || r.Errors > 0 || r.Requests < kc.Requests {
			t.Fatalf("%s: %d of %d requests, %d non-2xx, %d socket errors:\n%s", p.name, r.Requests, kc.Requests, r.Non2xx, r.Errors, out)
		}
		return r
	}
	for _, p := range paths {
		if err := checkPath(ctx, p); err != nil {
			t.Fatal(err)
		}
		serve(p) // warm-up: heaps, pools, nginx's workers
		kc.Paths[p.name] = &PathCost{}
	}
	orders := balancedOrders(len(paths))
	interleaved := func(runs int, fn func(p proxyPath)) {
		for i := range runs {
			for _, k := range orders[i%len(orders)] {
				fn(paths[k])
			}
		}
	}

	counts := map[string][]syscallCounts{}
	perReq := map[string][]float64{}
	interleaved(kc.CountRuns, func(p proxyPath) {
		c, err := startSyscallCount(ctx, p.proc.Cmd.Process.Pid, dir)
		if err != nil {
			t.Fatal(err)
		}
		r := serve(p)
		n, err := c.stop()
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		n = n.per(float64(r.Requests))
		counts[p.name] = append(counts[p.name], n)
		perReq[p.name] = append(perReq[p.name], n.total())
		t.Logf("bench: keep-alive %-7s %5.2f system calls per request (%d requests): %s; EAGAIN reads %.3f",
			p.name, n.total(), r.Requests, n.summary(), n.eagainRead)
	})
	interleaved(kc.CPURuns, func(p proxyPath) {
		pid := p.proc.Cmd.Process.Pid
		before := cpuSeconds(pid)
		r := serve(p)
		us := (cpuSeconds(pid) - before) * 1e6 / float64(r.Requests)
		pc := kc.Paths[p.name]
		pc.CPUusRuns = append(pc.CPUusRuns, round(us, 2))
		pc.RPSRuns = append(pc.RPSRuns, round(r.RPS, 0))
		t.Logf("bench: keep-alive %-7s %6.2f us CPU per request, %6.0f req/s", p.name, us, r.RPS)
	})
	for name, pc := range kc.Paths {
		mid := medianRun(perReq[name])
		n := counts[name][mid]
		pc.Syscalls = round(n.total(), 3)
		pc.SyscallRuns = roundAll(perReq[name], 3)
		pc.SyscallsByName = map[string]float64{}
		for k, v := range n.byName {
			pc.SyscallsByName[k] = round(v, 4)
		}
		pc.EpollWaits = round(n.epollWaits(), 3)
		pc.EAGAINReads = round(n.eagainRead, 3)
		pc.CPUus = round(median(pc.CPUusRuns), 2)
		pc.RPS = round(median(pc.RPSRuns), 0)
	}
	ours, ha := kc.Paths["ours"], kc.Paths["haproxy"]
	kc.SyscallRatio = round(ratio(ours.Syscalls, ha.Syscalls), 3)
	kc.CPURatio = round(ratio(ours.CPUus, ha.CPUus), 3)
	kc.Method = fmt.Sprintf("wrk -t1 -c%d, keep-alive, %d requests per run (a Lua script stops wrk's thread after that many responses), GET / of nginx (%d workers) through each proxy: ours with %s (one event loop), HAProxy %s with haproxy_config (nbthread 1, no splice, default buffers). System calls: perf stat on every thread of the proxy process with the syscalls:sys_enter_* tracepoints (exact counts), in runs of their own; EAGAIN reads are the syscalls:sys_exit_read and sys_exit_recvfrom tracepoints filtered on ret == -11; figures are per request, the median of %d runs. CPU: utime + stime of the process (/proc/PID/stat) over each run divided by its requests, the median of %d runs without perf; all runs interleaved in a balanced order",
		wrkConns, kc.Requests, nginxWorkers, kc.OursEnv, haproxyVersion(ctx), kc.CountRuns, kc.CPURuns)
	t.Logf("bench: keep-alive cost: ours %.2f system calls and %.2f us CPU per request, HAProxy %.2f and %.2f us: %.2f× and %.2f×",
		ours.Syscalls, ours.CPUus, ha.Syscalls, ha.CPUus, kc.SyscallRatio, kc.CPURatio)
	for _, p := range paths {
		p.proc.Stop()
	}
}

// medianRun is the index of the run whose value is the median (the lower
// of the middle two).
func medianRun(xs []float64) int {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	return idx[(len(idx)-1)/2]
}

// per divides every count by n.
func (c syscallCounts) per(n float64) syscallCounts {
	out := syscallCounts{byName: map[string]float64{}, eagainRead: c.eagainRead / n}
	for k, v := range c.byName {
		out.byName[k] = v / n
	}
	return out
}

func (c syscallCounts) total() float64 {
	var s float64
	for _, v := range c.byName {
		s += v
	}
	return s
}

func (c syscallCounts) epollWaits() float64 {
	var s float64
	for _, k := range epollWaits {
		s += c.byName[k]
	}
	return s
}

// summary lists the calls, most frequent first, those above 0.001 per
// request.
func (c syscallCounts) summary() string {
	names := slices.Collect(maps.Keys(c.byName))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(c.byName[b], c.byName[a]) })
	var out []string
	for _, k := range names {
		if c.byName[k] >= 0.001 {
			out = append(out, fmt.Sprintf("%s %.3f", k, c.byName[k]))
		}
	}
	return fmt.Sprint(out)
}

// haproxyVersion is haproxy -v's first line's version, or "".
func haproxyVersion(ctx context.Context) string {
	out, err := run(ctx, haproxyPath, "-v")
	if err != nil {
		return ""
	}
	var v string
	fmt.Sscanf(out, "HAProxy version %s", &v)
	return v
}

// keepaliveRows are the keep-alive cost lines of the targets table (issue
// 45); nothing when the phase has not run.
func keepaliveRows(r *Results, row func(measure, ours, cmp, rat, target string, ok bool)) {
	kc := r.ProxyKeepalive
	if kc == nil || kc.Paths["ours"] == nil || kc.Paths["haproxy"] == nil {
		return
	}
	ours, ha := kc.Paths["ours"], kc.Paths["haproxy"]
	row("proxy system calls per keep-alive request (one loop, HAProxy nbthread 1)", fmt.Sprintf("%.3f", ours.Syscalls), fmt.Sprintf("HAProxy %.3f", ha.Syscalls), fmt.Sprintf("%.3f×", kc.SyscallRatio), "≤ HAProxy's", ours.Syscalls <= ha.Syscalls)
	row("proxy CPU per keep-alive request (one loop, HAProxy nbthread 1)", fmt.Sprintf("%.2f µs (%.0f req/s)", ours.CPUus, ours.RPS), fmt.Sprintf("HAProxy %.2f µs (%.0f req/s)", ha.CPUus, ha.RPS), fmt.Sprintf("%.3f×", kc.CPURatio), "≤ 0.9× HAProxy", kc.CPURatio <= 0.9 && kc.CPURatio > 0)
}

// keepaliveDetail is results.md's keep-alive cost section.
func keepaliveDetail(r *Results) string {
	kc := r.ProxyKeepalive
	if kc == nil {
		return ""
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("\n## Keep-alive cost (system calls and CPU per request)\n\n%s. Measured %s.\n\n", kc.Method, kc.Date)
	names := slices.Sorted(maps.Keys(kc.Paths))
	p("| path | system calls / req | epoll waits / req | EAGAIN reads / req | CPU µs / req | req/s | system call runs | CPU runs (µs) | req/s runs |\n|---|---:|---:|---:|---:|---:|---|---|---|\n")
	for _, name := range names {
		pc := kc.Paths[name]
		p("| %s | %.3f | %.3f | %.3f | %.2f | %.0f | %v | %v | %v |\n", name, pc.Syscalls, pc.EpollWaits, pc.EAGAINReads, pc.CPUus, pc.RPS, pc.SyscallRuns, pc.CPUusRuns, pc.RPSRuns)
	}
	p("\nSystem calls per request by name (the median counting run; calls under 0.0005 per request left out):\n\n| call |")
	for _, name := range names {
		p(" %s |", name)
	}
	p("\n|---|%s\n", strings.Repeat("---:|", len(names)))
	calls := map[string]float64{}
	for _, pc := range kc.Paths {
		for k, v := range pc.SyscallsByName {
			calls[k] = max(calls[k], v)
		}
	}
	order := slices.Collect(maps.Keys(calls))
	slices.SortFunc(order, func(a, b string) int {
		if c := cmp.Compare(calls[b], calls[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for _, call := range order {
		if calls[call] < 0.0005 {
			continue
		}
		p("| %s |", call)
		for _, name := range names {
			p(" %.4f |", kc.Paths[name].SyscallsByName[call])
		}
		p("\n")
	}
	p("\nOur proxy ran with %s; HAProxy's configuration (addresses left out):\n\n```text\n%s```\n", kc.OursEnv, kc.HAProxyConfig)
	if len(kc.Alts) > 0 {
		p("\nOther builds of our proxy measured beside them: %v.\n", kc.Alts)
	}
	if len(kc.Loadavg) == 2 {
		p("\nLoad average (1, 5, 15 min): %s at the start, %s at the end.\n", kc.Loadavg[0], kc.Loadavg[1])
	}
	return b.String()
}
