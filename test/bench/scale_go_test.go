package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// goBenchLine is one result of plugin/hairpin's BenchmarkServeDNSTargets:
// mode (repeat or spread), targets, hosts, ns/op, CPU ns/op.
var goBenchLine = regexp.MustCompile(`(?m)^BenchmarkServeDNSTargets/hit/(\w+)/targets=(\d+)/hosts=(\d+)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) cpu-ns/op`)

// benchScaleGo runs the hit path of the multi-target index in-process: the
// plugin's BenchmarkServeDNSTargets (200,000 hosts over 100 targets against
// 10 hosts on 1), compiled once and run cfg.goBenchReps times, so that the
// sizes alternate and the figures are medians. The figures are CPU time per
// query: on a machine shared with compiles, wall-clock ns/op mostly measures
// how long the benchmark waited for a core (it is kept beside them).
func benchScaleGo(t *testing.T, cfg config, res *Results) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "hairpin.test")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, "./plugin/hairpin/")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c ./plugin/hairpin/: %v\n%s", err, out)
	}
	// The benchmark's sizes are its own (the plugin's fixed 100 targets and
	// 200,000 hosts), whatever BENCH_QUICK does to the other cases.
	sizeOf := func(targets, hosts int) string {
		switch {
		case hosts <= 10:
			return "small" // 10 hosts on 1 target
		case targets > 1:
			res.ScaleExtra["go_targets"], res.ScaleExtra["go_hosts"] = targets, hosts
			return "large" // the scale case
		default:
			return "onetarget" // as many hosts on 1 target
		}
	}
	runs := map[string][]float64{} // "spread_large" -> CPU ns/op per rep
	wall := map[string][]float64{} // the same, wall-clock ns/op
	for rep := 0; rep < cfg.goBenchReps; rep++ {
		out, err := run(ctx, bin, "-test.run", "^$", "-test.bench", "^BenchmarkServeDNSTargets$",
			"-test.benchtime", cfg.goBenchTime.String(), "-test.count", "1")
		if err != nil {
			t.Fatal(err)
		}
		found := goBenchLine.FindAllStringSubmatch(out, -1)
		if len(found) != 6 {
			t.Fatalf("want 6 results of BenchmarkServeDNSTargets, got %d:\n%s", len(found), out)
		}
		for _, m := range found {
			targets, _ := strconv.Atoi(m[2])
			hosts, _ := strconv.Atoi(m[3])
			ns, _ := strconv.ParseFloat(m[4], 64)
			cpu, _ := strconv.ParseFloat(m[5], 64)
			key := m[1] + "_" + sizeOf(targets, hosts)
			runs[key] = append(runs[key], cpu)
			wall[key] = append(wall[key], ns)
		}
		t.Logf("bench: scale go rep %d: %v, load %s", rep, runs, loadAvg())
	}
	for key, xs := range runs {
		res.ScaleExtra["go_ns_runs_"+key] = roundAll(xs, 0)
		res.ScaleExtra["go_wall_ns_"+key] = round(median(wall[key]), 0)
		res.ScaleExtra["go_wall_ns_runs_"+key] = roundAll(wall[key], 0)
	}
	ns := func(key string) float64 { return round(median(runs[key]), 0) }
	res.Scale.HitNsSmall, res.Scale.HitNsLarge = ns("spread_small"), ns("spread_large")
	res.Scale.RepeatNsSmall, res.Scale.RepeatNsLarge = ns("repeat_small"), ns("repeat_large")
	res.ScaleExtra["go_ns_spread_onetarget"] = ns("spread_onetarget")
	res.ScaleExtra["go_ns_repeat_onetarget"] = ns("repeat_onetarget")
	res.ScaleExtra["go_method"] = fmt.Sprintf("plugin/hairpin BenchmarkServeDNSTargets (ServeDNS of an A hit, index built through the watch handlers), process CPU time per query (getrusage), -benchtime %s, %d interleaved runs, medians; spread walks all hosts in a shuffled order, repeat asks one name", cfg.goBenchTime, cfg.goBenchReps)
}
