package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// wrk settings: one wrk thread (the other core is left to the proxy and
// nginx), 32 connections for throughput; one connection for latency, so the
// percentiles are the per-request cost, not queueing.
const (
	wrkConns     = 32
	nginxWorkers = 2
	haproxyPath  = "/usr/sbin/haproxy"
)

// EnvProxyAlt names further hairpin-proxy binaries to measure alongside
// ours, comma-separated; they are named alt1, alt2, ... in the log.
const EnvProxyAlt = "BENCH_PROXY_ALT"

func altBinaries() map[string]string {
	alts := map[string]string{}
	for i, b := range strings.Split(os.Getenv(EnvProxyAlt), ",") {
		if b = strings.TrimSpace(b); b != "" {
			alts[fmt.Sprintf("alt%d", i+1)] = b
		}
	}
	return alts
}

// proxyPath is one way to reach nginx: through our proxy, through HAProxy,
// or directly.
type proxyPath struct {
	name   string
	addr   string // what clients dial
	proc   *harness.Process
	health string // our proxy's --health-addr
}

func (p proxyPath) url(path string) string { return "http://" + p.addr + path }

func startOurProxy(t *testing.T, bin string, upstream string, extra ...string) proxyPath {
	t.Helper()
	return startOurProxyEnv(t, nil, bin, upstream, extra...)
}

// startOurProxyEnv is startOurProxy with env added to the test's
// environment (GOMAXPROCS=1: one event loop).
func startOurProxyEnv(t *testing.T, env []string, bin string, upstream string, extra ...string) proxyPath {
	t.Helper()
	ip := harness.FreeLoopbackIP(t).String()
	addr := harness.FreeAddr(t, ip)
	health := harness.FreeAddr(t, "127.0.0.1")
	args := append([]string{
		"--route", addr + "=" + upstream + ",name=bench",
		"--health-addr", health,
		"--log-level", "warn"}, extra...)
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	proc := harness.StartCmd(t, "hairpin-proxy", cmd)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := proc.Ready(ctx, harness.HTTPProbe("http://"+health+"/readyz")); err != nil {
		t.Fatal(err)
	}
	return proxyPath{name: "ours", addr: addr, proc: proc, health: health}
}

// haproxyConfig is HAProxy the way compumike/hairpin-proxy ships it: TCP
// mode, one server with send-proxy (PROXY v1), with threads threads, and
// everything else at its defaults: no splice (nosplice says so, though
// HAProxy splices only when an option asks for it) and the default
// buffers (tune.bufsize 16 KiB).
func haproxyConfig(threads int, listen, upstream string) string {
	return fmt.Sprintf(`global
    nbthread %d
    maxconn 5000
    nosplice

defaults
    mode tcp
    timeout connect 5s
    timeout client 10m
    timeout server 10m

frontend fe
    bind %s
    default_backend be

backend be
    server s1 %s send-proxy
`, threads, listen, upstream)
}

// startHAProxy runs HAProxy with haproxyConfig.
func startHAProxy(t *testing.T, upstream string, threads int) proxyPath {
	t.Helper()
	ip := harness.FreeLoopbackIP(t).String()
	addr := harness.FreeAddr(t, ip)
	path := harness.WriteFile(t, t.TempDir(), "haproxy.cfg", haproxyConfig(threads, addr, upstream))
	proc := harness.StartProcess(t, "haproxy", haproxyPath, "-db", "-f", path)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := proc.Ready(ctx, harness.TCPProbe(addr)); err != nil {
		t.Fatal(err)
	}
	return proxyPath{name: "haproxy", addr: addr, proc: proc}
}

// checkPath makes one request and checks nginx's answer.
func checkPath(ctx context.Context, p proxyPath) error {
	body, code, err := httpGet(ctx, p.url("/"))
	if err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	if code != 200 || !strings.HasPrefix(string(body), "ok host=") || !strings.Contains(string(body), "client=127.") {
		return fmt.Errorf("%s: HTTP %d %q", p.name, code, body)
	}
	return nil
}

type wrkResult struct {
	RPS          float64
	P50US, P99US float64
	Requests     int
	Errors       int // socket errors of every kind
	Non2xx       int
}

var (
	reRPS      = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	reReqs     = regexp.MustCompile(`(\d+) requests in`)
	reSockErr  = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	reNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	rePercent  = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([0-9.]+)(us|ms|s)\s*$`)
	unitFactor = map[string]float64{"us": 1, "ms": 1e3, "s": 1e6}
)

func runWrk(ctx context.Context, url string, conns int, d time.Duration, extra ...string) (wrkResult, string, error) {
	args := append([]string{"-t1", "-c" + strconv.Itoa(conns), "-d" + strconv.Itoa(int(d.Seconds())) + "s", "--latency"}, extra...)
	return wrk(ctx, append(args, url), d)
}

// wrkStopScript makes wrk's one thread stop after a fixed number of
// responses, the first argument after "--", and then create the file named
// by the second: every path serves the same requests, and figures per
// request divide by the same count. wrk itself runs on until its -d or a
// SIGINT (which it takes as the end of the run); runWrkN sends that as
// soon as the file is there, so req/s is not diluted by the wait.
const wrkStopScript = `local left, marker
function init(args) left, marker = tonumber(args[1]), args[2] end
function response(status, headers, body)
  left = left - 1
  if left == 0 then
    wrk.thread:stop()
    io.open(marker, "w"):close()
  end
end
`

// runWrkN is runWrk for n requests (and at most d) with script, a file
// holding wrkStopScript. The requests still in flight on the other
// connections when the thread stops (conns-1 at most) are served too, but
// not counted.
func runWrkN(ctx context.Context, url, script string, conns, n int, d time.Duration) (wrkResult, string, error) {
	marker := filepath.Join(filepath.Dir(script), fmt.Sprintf("done-%d", time.Now().UnixNano()))
	ctx, cancel := context.WithTimeout(ctx, d+60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "wrk", "-t1", "-c"+strconv.Itoa(conns), "-d"+strconv.Itoa(int(d.Seconds()))+"s", "-s", script, url, "--", strconv.Itoa(n), marker)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return wrkResult{}, "", fmt.Errorf("wrk: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return wrkResult{}, out.String(), fmt.Errorf("wrk: %w\n%s", err, out.String())
			}
			return parseWrk(out.String())
		case <-tick.C:
			if _, err := os.Stat(marker); err == nil {
				_ = cmd.Process.Signal(syscall.SIGINT)
				tick.Stop()
			}
		}
	}
}

// wrk runs wrk with args, for at most d, and reads its summary.
func wrk(ctx context.Context, args []string, d time.Duration) (wrkResult, string, error) {
	ctx, cancel := context.WithTimeout(ctx, d+60*time.Second)
	defer cancel()
	out, err := run(ctx, "wrk", args...)
	if err != nil {
		return wrkResult{}, out, err
	}
	return parseWrk(out)
}

// parseWrk reads wrk's summary; it fails when no request completed.
func parseWrk(out string) (wrkResult, string, error) {
	var r wrkResult
	if m := reRPS.FindStringSubmatch(out); m != nil {
		r.RPS, _ = strconv.ParseFloat(m[1], 64)
	}
	if m := reReqs.FindStringSubmatch(out); m != nil {
		r.Requests, _ = strconv.Atoi(m[1])
	}
	if m := reSockErr.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.Atoi(s)
			r.Errors += n
		}
	}
	if m := reNon2xx.FindStringSubmatch(out); m != nil {
		r.Non2xx, _ = strconv.Atoi(m[1])
	}
	for _, m := range rePercent.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		v *= unitFactor[m[3]]
		if m[1] == "50" {
			r.P50US = v
		} else {
			r.P99US = v
		}
	}
	if r.RPS == 0 || r.Requests == 0 {
		return r, out, fmt.Errorf("wrk: no requests completed:\n%s", out)
	}
	return r, out, nil
}

func benchProxy(t *testing.T, cfg config, bin map[string]string, res *Results) {
	ctx := t.Context()
	// A proxy run replaces every proxy figure: keys of an earlier run (an
	// alternative build's, say) must not survive beside these.
	res.ProxyExtra = map[string]any{"date": time.Now().UTC().Format(time.RFC3339)}
	loadStart := loadAvg()
	defer func() { res.ProxyExtra["loadavg"] = []string{loadStart, loadAvg()} }()
	ngx := harness.StartNginx(t, harness.NginxOptions{PlainListeners: true, Workers: nginxWorkers})
	bulk, err := ngx.BulkFile(cfg.bulkBytes)
	if err != nil {
		t.Fatal(err)
	}
	paths := []proxyPath{
		startOurProxy(t, bin["proxy"], ngx.HTTPAddr),
		startHAProxy(t, ngx.HTTPAddr, runtime.GOMAXPROCS(0)),
		{name: "direct", addr: ngx.PlainHTTPAddr},
	}
	// A second build of our proxy, interleaved with the others, to compare
	// a change side by side; its figures are logged, not recorded.
	alts := altBinaries()
	for _, name := range slices.Sorted(maps.Keys(alts)) {
		p := startOurProxy(t, alts[name], ngx.HTTPAddr)
		p.name = name
		paths = append(paths, p)
	}
	for _, p := range paths {
		if err := checkPath(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	type series map[string][]float64
	ka, kaP50, kaP99, cps, latP50, latP99, mbps := series{}, series{}, series{}, series{}, series{}, series{}, series{}

	// CPU time of the proxy process per request: unlike req/s it barely
	// moves when other work shares the machine, so it is what tells two
	// builds apart.
	cpuPerReq := series{}
	measure := func(p proxyPath, what string, conns int, d time.Duration, extra ...string) (wrkResult, string, error) {
		var before float64
		if p.proc != nil {
			before = cpuSeconds(p.proc.Cmd.Process.Pid)
		}
		r, out, err := runWrk(ctx, p.url("/"), conns, d, extra...)
		if p.proc != nil && err == nil && r.Requests > 0 {
			us := (cpuSeconds(p.proc.Cmd.Process.Pid) - before) * 1e6 / float64(r.Requests)
			cpuPerReq[p.name+"_"+what] = append(cpuPerReq[p.name+"_"+what], us)
			t.Logf("bench: proxy %-7s %-9s %6.1f us CPU per request", p.name, what, us)
		}
		return r, out, err
	}
	check := func(p proxyPath, what string, r wrkResult, out string) {
		t.Logf("bench: proxy %-7s %-9s %9.0f req/s, p50 %7.0f us, p99 %7.0f us, %d requests, %d socket errors, %d non-2xx",
			p.name, what, r.RPS, r.P50US, r.P99US, r.Requests, r.Errors, r.Non2xx)
		if r.Non2xx > 0 || r.Errors*1000 > r.Requests {
			t.Fatalf("%s %s: %d non-2xx responses and %d socket errors in %d requests:\n%s", p.name, what, r.Non2xx, r.Errors, r.Requests, out)
		}
	}
	// Warm-up, not recorded: a short wrk run per path (process heaps,
	// nginx workers), and one direct download of the bulk file so that its
	// page cache is filled before the first measured download.
	for _, p := range paths {
		if _, out, err := runWrk(ctx, p.url("/"), wrkConns, time.Second); err != nil {
			t.Fatalf("%s warm-up: %v\n%s", p.name, err, out)
		}
	}
	if _, err := run(ctx, "curl", "-sS", "--max-time", "300", "-o", "/dev/null", paths[2].url(bulk)); err != nil {
		t.Fatalf("bulk warm-up: %v", err)
	}
	// Each measure runs once per order of balancedOrders (only the first in
	// a quick run): a path's figure must not depend on which path ran just
	// before it (a new-connection run leaves thousands of sockets in
	// TIME_WAIT for the next minute), and a plain rotation always runs ours
	// right after direct.
	orders := balancedOrders(len(paths))
	if cfg.quick {
		orders = orders[:1]
	}
	res.ProxyExtra["repetitions"] = len(orders)
	interleaved := func(fn func(p proxyPath)) {
		for _, order := range orders {
			for _, i := range order {
				fn(paths[i])
			}
		}
	}
	interleaved(func(p proxyPath) {
		r, out, err := measure(p, "keepalive", wrkConns, cfg.wrkDur)
		if err != nil {
			t.Fatalf("%s keep-alive: %v", p.name, err)
		}
		check(p, "keepalive", r, out)
		ka[p.name], kaP50[p.name], kaP99[p.name] = append(ka[p.name], r.RPS), append(kaP50[p.name], r.P50US), append(kaP99[p.name], r.P99US)
	})
	interleaved(func(p proxyPath) {
		r, out, err := measure(p, "conn/req", wrkConns, cfg.wrkDur, "-H", "Connection: close")
		if err != nil {
			t.Fatalf("%s new connections: %v", p.name, err)
		}
		check(p, "conn/req", r, out)
		cps[p.name] = append(cps[p.name], r.RPS)
	})
	interleaved(func(p proxyPath) {
		r, out, err := measure(p, "latency", 1, cfg.latDur)
		if err != nil {
			t.Fatalf("%s latency: %v", p.name, err)
		}
		check(p, "latency", r, out)
		latP50[p.name], latP99[p.name] = append(latP50[p.name], r.P50US), append(latP99[p.name], r.P99US)
	})
	interleaved(func(p proxyPath) {
		var before float64
		if p.proc != nil {
			before = cpuSeconds(p.proc.Cmd.Process.Pid)
		}
		out, err := run(ctx, "curl", "-sS", "--max-time", "300", "-o", "/dev/null",
			"-w", "%{http_code} %{size_download} %{speed_download}", p.url(bulk))
		if p.proc != nil && err == nil {
			ms := (cpuSeconds(p.proc.Cmd.Process.Pid) - before) * 1e3 / (float64(cfg.bulkBytes) / 1e9)
			cpuPerReq[p.name+"_bulk_ms_per_GB"] = append(cpuPerReq[p.name+"_bulk_ms_per_GB"], ms)
			t.Logf("bench: proxy %-7s bulk      %6.0f ms CPU per GB", p.name, ms)
		}
		if err != nil {
			t.Fatalf("%s bulk: %v", p.name, err)
		}
		f := strings.Fields(out)
		if len(f) != 3 || f[0] != "200" || f[1] != strconv.FormatInt(cfg.bulkBytes, 10) {
			t.Fatalf("%s bulk: curl says %q, want 200 and %d bytes", p.name, out, cfg.bulkBytes)
		}
		speed, _ := strconv.ParseFloat(f[2], 64)
		t.Logf("bench: proxy %-7s bulk      %9.1f MB/s", p.name, speed/1e6)
		mbps[p.name] = append(mbps[p.name], speed/1e6)
	})
	pr := &res.Proxy
	pr.OursRPSKeepalive, pr.HAProxyRPSKeepalive, pr.DirectRPSKeepalive = round(median(ka["ours"]), 0), round(median(ka["haproxy"]), 0), round(median(ka["direct"]), 0)
	pr.OursCPS, pr.HAProxyCPS, pr.DirectCPS = round(median(cps["ours"]), 0), round(median(cps["haproxy"]), 0), round(median(cps["direct"]), 0)
	pr.OursMBps, pr.HAProxyMBps, pr.DirectMBps = round(median(mbps["ours"]), 0), round(median(mbps["haproxy"]), 0), round(median(mbps["direct"]), 0)
	pr.OursP99us, pr.HAProxyP99us, pr.DirectP99us = round(median(latP99["ours"]), 0), round(median(latP99["haproxy"]), 0), round(median(latP99["direct"]), 0)
	for _, p := range paths {
		res.ProxyExtra[p.name+"_p50_us"] = round(median(latP50[p.name]), 0)
		res.ProxyExtra[p.name+"_keepalive_c32_p50_us"] = round(median(kaP50[p.name]), 0)
		res.ProxyExtra[p.name+"_keepalive_c32_p99_us"] = round(median(kaP99[p.name]), 0)
		res.ProxyExtra[p.name+"_rps_keepalive_runs"] = roundAll(ka[p.name], 0)
		res.ProxyExtra[p.name+"_cps_runs"] = roundAll(cps[p.name], 0)
		res.ProxyExtra[p.name+"_mbps_runs"] = roundAll(mbps[p.name], 0)
	}
	for k, v := range cpuPerReq {
		if strings.HasSuffix(k, "_per_GB") {
			res.ProxyExtra[k+"_cpu"] = round(median(v), 0)
			continue
		}
		res.ProxyExtra[strings.ReplaceAll(k, "/", "_per_")+"_cpu_us_per_req"] = round(median(v), 1)
	}
	res.ProxyExtra["method"] = fmt.Sprintf("wrk -t1 -c%d -d%s (keep-alive; and with -H 'Connection: close' for new connections/s); latency = wrk -t1 -c1 -d%s --latency; bulk = curl of a %d-byte sendfile download, MB = 10^6 bytes; medians of %d repetitions in a balanced order (every path in every place, and right after every other path, equally often); nginx %d workers; haproxy nbthread %d; our proxy GOMAXPROCS %d",
		wrkConns, cfg.wrkDur, cfg.latDur, cfg.bulkBytes, len(orders), nginxWorkers, runtime.GOMAXPROCS(0), runtime.GOMAXPROCS(0))
	for _, p := range paths {
		if p.proc != nil {
			p.proc.Stop()
		}
	}

	// Idle connections: fresh processes, so earlier load does not inflate
	// the figure; interleaved ours, haproxy, ours, ...
	idle, base := series{}, series{}
	for rep := 0; rep < cfg.reps; rep++ {
		names := append([]string{"ours", "haproxy"}, slices.Sorted(maps.Keys(alts))...)
		for _, name := range names {
			var p proxyPath
			switch name {
			case "ours":
				p = startOurProxy(t, bin["proxy"], ngx.HTTPAddr)
			case "haproxy":
				p = startHAProxy(t, ngx.HTTPAddr, runtime.GOMAXPROCS(0))
			default:
				p = startOurProxy(t, alts[name], ngx.HTTPAddr)
			}
			b, r := idleRSS(t, p, cfg.idleConns)
			t.Logf("bench: proxy %-7s RSS %.1f MiB idle, %.1f MiB with %d idle connections", name, b, r, cfg.idleConns)
			base[name], idle[name] = append(base[name], b), append(idle[name], r)
			p.proc.Stop()
		}
	}
	pr.OursRSSMB1kIdle, pr.HAProxyRSSMB1kIdle = round(median(idle["ours"]), 1), round(median(idle["haproxy"]), 1)
	res.ProxyExtra["ours_rss_mb_no_conns"] = round(median(base["ours"]), 1)
	res.ProxyExtra["haproxy_rss_mb_no_conns"] = round(median(base["haproxy"]), 1)
	res.ProxyExtra["idle_conns"] = cfg.idleConns
}

// balancedOrders returns orders of n paths, as path indexes, that balance
// both place and carryover (a Williams design): over all of them every
// path is in every place, and runs right after every other path, equally
// often. Row i is the first row plus i, mod n; the first row is 0, 1, n-1,
// 2, n-2, ... For odd n those n rows balance the places only, and their
// mirror images complete the design (2n orders).
func balancedOrders(n int) [][]int {
	first := make([]int, n)
	for k := 1; k < n; k++ {
		if k%2 == 1 {
			first[k] = (k + 1) / 2
		} else {
			first[k] = n - k/2
		}
	}
	var orders [][]int
	for i := range n {
		row := make([]int, n)
		for k, v := range first {
			row[k] = (v + i) % n
		}
		orders = append(orders, row)
	}
	if n%2 == 1 {
		for i := range n {
			mirror := slices.Clone(orders[i])
			slices.Reverse(mirror)
			orders = append(orders, mirror)
		}
	}
	return orders
}

// idleRSS reads the proxy's RSS, then opens n connections through it, holds
// them, and reads its RSS again (median of samples over 2 s). It checks that
// the proxy really holds both sides of every connection.
func idleRSS(t *testing.T, p proxyPath, n int) (before, with float64) {
	pid := p.proc.Cmd.Process.Pid
	time.Sleep(500 * time.Millisecond)
	before, err := minRSS(pid, 3, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var dialErr error
	sem := make(chan struct{}, 32)
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				dialErr = err
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	if dialErr != nil {
		t.Fatalf("%s: dial: %v", p.name, dialErr)
	}
	// Both sides of each connection are open in the proxy: n accepted plus
	// n upstream sockets.
	deadline := time.Now().Add(15 * time.Second)
	for {
		fds := countFDs(pid)
		if fds >= 2*n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: holds %d fds, want >= %d for %d proxied connections", p.name, fds, 2*n, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	var samples []float64
	for i := 0; i < 5; i++ {
		v, err := rssMB(pid)
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, v)
		time.Sleep(400 * time.Millisecond)
	}
	// The connections must still be usable (nothing timed them out).
	c := conns[0]
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: app.example.com\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatalf("%s: idle connection: %v", p.name, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: idle connection answer: %v %v", p.name, resp, err)
	}
	return before, median(samples)
}

// cpuSeconds is a process's user+system CPU time so far (all threads), from
// /proc/PID/stat; 0 if unreadable.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the ")" that ends the command name: state is field 3,
	// utime and stime are fields 14 and 15.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

// loadAvg is /proc/loadavg's 1, 5 and 15 minute figures: the machine is
// shared, and the throughput figures mean little without it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

func countFDs(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	return len(ents)
}
