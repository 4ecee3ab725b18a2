package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// EnvBench gates the benchmarks: without HAIRPIN_BENCH=1 TestBench skips at
// once, so `go test ./...` (make test) does not run them.
const EnvBench = "HAIRPIN_BENCH"

// EnvQuick selects the smoke-run settings.
const EnvQuick = "BENCH_QUICK"

// EnvOnly, when set, runs only the named phases (comma-separated: proxy,
// kube, order, scale) and keeps the other phases' figures from the results.json
// already there, so that one phase can be re-measured on its own.
const EnvOnly = "BENCH_ONLY"

// EnvProfileDir, when set, makes the DNS phase take a CPU profile of the
// hairpin and hosts servers at the largest size (CoreDNS's pprof plugin) into
// that folder, for investigating a missed target. It is off for the recorded
// runs, since the pprof plugin is not part of the measured Corefiles.
const EnvProfileDir = "BENCH_PROFILE_DIR"

// Command is how the recorded results are produced.
const Command = "make bench   # = KUBEBUILDER_ASSETS=$(build/tools.sh --dir) HAIRPIN_BIN=$PWD/bin HAIRPIN_BENCH=1 HAIRPIN_REQUIRE_E2E=1 go test -count=1 -v -run '^TestBench$' -timeout 60m ./test/bench/"

// config holds the sizes and durations of one run.
type config struct {
	quick       bool
	reps        int           // repetitions of every measure; figures are medians
	objects     int           // "10k": Ingresses (DNS hosts, memory objects)
	small       int           // the small DNS case
	dnsDur      time.Duration // one dnsperf run
	propChanges int           // propagation samples
	settle      time.Duration // longest wait for RSS to settle after a forced GC
	wrkDur      time.Duration // one wrk throughput run
	latDur      time.Duration // one wrk single-connection latency run
	bulkBytes   int64         // bulk download size
	idleConns   int           // idle connections held through a proxy

	// The scale phase (issue 11).
	scaleTargets   int           // targets, each with its own class, zone and namespace
	scaleIngresses int           // Ingresses of 2 hosts each, spread over the targets
	scaleChanges   int           // propagation samples under load
	scaleRate      int           // changes per second while they are measured
	goBenchReps    int           // runs of the plugin's BenchmarkServeDNSTargets
	goBenchTime    time.Duration // its -benchtime
}

func newConfig() config {
	c := config{
		reps: 3, objects: 10000, small: 10, dnsDur: 10 * time.Second, propChanges: 240,
		settle: 60 * time.Second, wrkDur: 10 * time.Second, latDur: 5 * time.Second,
		bulkBytes: 1 << 30, idleConns: 1000,
		scaleTargets: 100, scaleIngresses: 100_000, scaleChanges: 600, scaleRate: 10, goBenchReps: 5, goBenchTime: 500 * time.Millisecond,
	}
	if os.Getenv(EnvQuick) == "1" {
		c.quick = true
		c.reps = 1
		c.objects = 1000
		c.dnsDur = 3 * time.Second
		c.propChanges = 30
		c.settle = 10 * time.Second
		c.wrkDur = 3 * time.Second
		c.latDur = 2 * time.Second
		c.bulkBytes = 1 << 30
		c.scaleTargets = 10
		c.scaleIngresses = 5000
		c.scaleChanges = 30
		c.goBenchReps = 1
		c.goBenchTime = 200 * time.Millisecond
	}
	return c
}

// Results is results.json. The fixed keys are the schema; the
// *_extra maps hold further figures.
type Results struct {
	Date        string         `json:"date"`
	Machine     string         `json:"machine"`
	Command     string         `json:"command"`
	Quick       bool           `json:"quick"`
	Repetitions int            `json:"repetitions"`
	PartialRuns []string       `json:"partial_runs,omitempty"` // BENCH_ONLY runs merged in since Date
	Objects     int            `json:"objects"`
	DurationS   float64        `json:"duration_s"`
	DNS         DNSResults     `json:"dns"`
	DNSLatency  map[string]any `json:"dns_latency_us"`
	DNSExtra    map[string]any `json:"dns_extra"`
	Propagation PropResults    `json:"propagation_ms"`
	PropExtra   map[string]any `json:"propagation_extra"`
	Memory      MemResults     `json:"memory_mb"`
	MemExtra    map[string]any `json:"memory_extra"`
	Proxy       ProxyResults   `json:"proxy"`
	ProxyExtra  map[string]any `json:"proxy_extra"`
	// ProxyKeepalive is the keep-alive cost phase's (keepalive_test.go).
	ProxyKeepalive *KeepaliveCost `json:"proxy_keepalive_cost,omitempty"`
	Scale          ScaleResults   `json:"scale"`
	ScaleExtra     map[string]any `json:"scale_extra"`
	// Soak is `make soak`'s (soak_test.go); every bench run keeps it.
	Soak *SoakResults `json:"soak,omitempty"`
}

type DNSResults struct {
	HairpinQPS10  float64 `json:"hairpin_qps_10"`
	HostsQPS10    float64 `json:"hosts_qps_10"`
	RewriteQPS10  float64 `json:"rewrite_qps_10"`
	HairpinQPS10k float64 `json:"hairpin_qps_10k"`
	HostsQPS10k   float64 `json:"hosts_qps_10k"`
	RewriteQPS10k float64 `json:"rewrite_qps_10k"`
}

type PropResults struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	N   int     `json:"n"`
}

type MemResults struct {
	RSS0     float64 `json:"rss_0"`
	RSS10k   float64 `json:"rss_10k"`
	Sync10kS float64 `json:"sync_10k_s"`
}

type ProxyResults struct {
	OursRPSKeepalive    float64 `json:"ours_rps_keepalive"`
	HAProxyRPSKeepalive float64 `json:"haproxy_rps_keepalive"`
	DirectRPSKeepalive  float64 `json:"direct_rps_keepalive"`
	OursCPS             float64 `json:"ours_cps"`
	HAProxyCPS          float64 `json:"haproxy_cps"`
	DirectCPS           float64 `json:"direct_cps"`
	OursMBps            float64 `json:"ours_mbps"`
	HAProxyMBps         float64 `json:"haproxy_mbps"`
	DirectMBps          float64 `json:"direct_mbps"`
	OursP99us           float64 `json:"ours_p99_us"`
	HAProxyP99us        float64 `json:"haproxy_p99_us"`
	DirectP99us         float64 `json:"direct_p99_us"`
	OursRSSMB1kIdle     float64 `json:"ours_rss_mb_1k_idle"`
	HAProxyRSSMB1kIdle  float64 `json:"haproxy_rss_mb_1k_idle"`
}

// ScaleResults are the scale phase's figures (issue 11): the multi-target
// index with Ingresses Ingresses of 2 hosts over Targets targets. "Small" is
// the 10-host, 1-target case.
type ScaleResults struct {
	Targets       int     `json:"targets"`
	Ingresses     int     `json:"ingresses"`
	Hosts         int     `json:"hosts"`
	HitNsSmall    float64 `json:"hit_ns_10"`           // ServeDNS hit, CPU ns/op, names spread over the index
	HitNsLarge    float64 `json:"hit_ns_large"`        // the same at Hosts hosts
	RepeatNsSmall float64 `json:"hit_ns_repeat_10"`    // ServeDNS hit, CPU ns/op, one name
	RepeatNsLarge float64 `json:"hit_ns_repeat_large"` // the same at Hosts hosts
	QPSSmall      float64 `json:"qps_10"`              // dnsperf against bin/coredns
	QPSLarge      float64 `json:"qps_large"`
	RSS0          float64 `json:"rss_0_mb"`
	RSS           float64 `json:"rss_mb"`
	ExtraRSS      float64 `json:"extra_rss_mb"`
	SyncS         float64 `json:"sync_s"` // process start until every host is served
	PropP50       float64 `json:"propagation_p50_ms"`
	PropP99       float64 `json:"propagation_p99_ms"`
	PropN         int     `json:"propagation_n"`
	// InformerPropP99 is a bare client-go informer's p99 over the same
	// changes, in the same run: from just before the API call to its event.
	InformerPropP99 float64 `json:"informer_propagation_p99_ms"`
	ChangesPerS     float64 `json:"changes_per_s"`
}

// TestBench runs every benchmark and writes results.json and results.md.
func TestBench(t *testing.T) {
	if os.Getenv(EnvBench) != "1" {
		t.Skipf("benchmarks run only with %s=1 (make bench)", EnvBench)
	}
	cfg := newConfig()
	only := phases(os.Getenv(EnvOnly))
	proxyOnly := only != nil && !slices.ContainsFunc(slices.Collect(maps.Keys(only)), func(p string) bool { return p != "proxy" && p != "keepalive" })
	tools := []string{"dnsperf", "wrk", "haproxy", "curl", "perf", "unshare"}
	if proxyOnly {
		tools = tools[1:]
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing (make bench installs dnsperf, wrk, haproxy, nginx, linux-perf): %v", tool, err)
		}
	}
	bin := map[string]string{"proxy": harness.RequireBinary(t, "hairpin-proxy")}
	if !proxyOnly {
		bin["coredns"] = harness.RequireBinary(t, "coredns")
	}
	start := time.Now()
	res := &Results{
		Date:        start.UTC().Format(time.RFC3339),
		Machine:     machine(),
		Command:     Command,
		Quick:       cfg.quick,
		Repetitions: cfg.reps,
		Objects:     cfg.objects,
		DNSLatency:  map[string]any{},
		DNSExtra:    map[string]any{},
		PropExtra:   map[string]any{},
		MemExtra:    map[string]any{},
		ProxyExtra:  map[string]any{},
		ScaleExtra:  map[string]any{},
	}
	if cfg.quick {
		res.Command = "BENCH_QUICK=1 " + Command
	}
	res.Soak = previousSoak()
	kept := only != nil && !cfg.quick && keepPrevious(t, res)
	t.Logf("bench: %s, quick=%v, reps=%d, objects=%d", res.Machine, cfg.quick, cfg.reps, cfg.objects)

	// The proxy phase first, while no control plane runs.
	for _, phase := range []struct {
		name string
		run  func(*testing.T, config, map[string]string, *Results)
	}{{"keepalive", benchKeepalive}, {"proxy", benchProxy}, {"kube", benchKube}, {"order", benchOrderPhase}, {"scale", benchScale}} {
		// The proxy phase includes the keep-alive cost; BENCH_ONLY=keepalive
		// runs that alone.
		if only == nil || only[phase.name] || (phase.name == "keepalive" && only["proxy"]) {
			t.Run(phase.name, func(t *testing.T) { phase.run(t, cfg, bin, res) })
		}
	}

	if kept {
		res.PartialRuns = append(res.PartialRuns, fmt.Sprintf("%s: %s=%s (%.0f s) on %s", start.UTC().Format(time.RFC3339), EnvOnly, os.Getenv(EnvOnly), time.Since(start).Seconds(), machine()))
		writeResults(t, res, t.Failed())
		return
	}
	res.DurationS = round(time.Since(start).Seconds(), 1)
	if t.Failed() {
		t.Log("bench: something broke; results are written anyway, marked as failed")
	}
	writeResults(t, res, t.Failed())
}

// phases parses BENCH_ONLY; nil means every phase.
func phases(v string) map[string]bool {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	out := map[string]bool{}
	for _, p := range strings.Split(v, ",") {
		out[strings.TrimSpace(p)] = true
	}
	return out
}

// keepPrevious starts from the results.json already written, so that a
// BENCH_ONLY run replaces only its own phases' figures. It reports whether
// there was a full run to keep.
func keepPrevious(t *testing.T, res *Results) bool {
	b, err := os.ReadFile("results.json")
	if err != nil {
		t.Logf("bench: %s: no previous results.json to keep (%v)", EnvOnly, err)
		return false
	}
	prev := *res
	if err := json.Unmarshal(b, res); err != nil {
		t.Fatalf("bench: %s: previous results.json: %v", EnvOnly, err)
	}
	if res.Quick {
		t.Logf("bench: %s: the previous results.json is a quick run; not kept", EnvOnly)
		*res = prev
		return false
	}
	for _, m := range []*map[string]any{&res.DNSLatency, &res.DNSExtra, &res.PropExtra, &res.MemExtra, &res.ProxyExtra, &res.ScaleExtra} {
		if *m == nil {
			*m = map[string]any{}
		}
	}
	return true
}

func writeResults(t *testing.T, res *Results, failed bool) {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if err := os.WriteFile("results.json", b, 0o644); err != nil {
		t.Fatal(err)
	}
	md := markdown(res, failed)
	if err := os.WriteFile("results.md", []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("results.md")
	t.Logf("bench: wrote %s and results.json:\n%s", abs, md)
}

// machine describes the host: CPU count and model, memory, kernel, Go.
func machine() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	mem := 0.0
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				mem = kb / (1 << 20)
			}
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("nproc=%d (%s), memory=%.1f GiB, linux %s, %s", runtime.NumCPU(), model, mem, kernel, runtime.Version())
}

// --- small helpers shared by the phases ---

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percentile returns the p-th percentile (0 < p <= 100) of xs by the
// nearest-rank method.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// rssMB reads VmRSS of pid in MiB.
func rssMB(pid int) (float64, error) { return statusMB(pid, "VmRSS:") }

// statusMB reads a kB field of /proc/pid/status ("VmRSS:", "VmHWM:") in MiB.
func statusMB(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == field {
			kb, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return 0, err
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// minRSS samples VmRSS n times, every interval, and returns the smallest.
func minRSS(pid, n int, interval time.Duration) (float64, error) {
	best := math.Inf(1)
	for i := 0; i < n; i++ {
		v, err := rssMB(pid)
		if err != nil {
			return 0, err
		}
		best = min(best, v)
		if i < n-1 {
			time.Sleep(interval)
		}
	}
	return best, nil
}

func httpGet(ctx context.Context, url string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	return buf.Bytes(), resp.StatusCode, err
}

// run runs a command to completion with a deadline and returns its stdout;
// stderr is appended to the error.
func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s%s", name, strings.Join(args, " "), err, errb.String(), tail(out.String(), 2000))
	}
	return out.String() + errb.String(), nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
