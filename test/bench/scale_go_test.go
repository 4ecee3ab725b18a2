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
// mode (repeat or spread), targets, hosts, ns/op.
var goBenchLine = regexp.MustCompile(`(?m)^BenchmarkServeDNSTargets/hit/(\w+)/targets=(\d+)/hosts=(\d+)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op`)

// benchScaleGo runs the hit path of the multi-target index in-process: the
// plugin's BenchmarkServeDNSTargets (200,000 hosts over 100 targets against
// 10 hosts on 1), compiled once and run cfg.goBenchReps times, so that the
// two sizes alternate and the figures are medians.
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
	runs := map[string][]float64{} // "spread/1/10" -> ns/op per rep
	for rep := 0; rep < cfg.goBenchReps; rep++ {
		out, err := run(ctx, bin, "-test.run", "^$", "-test.bench", "^BenchmarkServeDNSTargets$",
			"-test.benchtime", cfg.goBenchTime.String(), "-test.count", "1")
		if err != nil {
			t.Fatal(err)
		}
		found := goBenchLine.FindAllStringSubmatch(out, -1)
		if len(found) != 4 {
			t.Fatalf("want 4 results of BenchmarkServeDNSTargets, got %d:\n%s", len(found), out)
		}
		for _, m := range found {
			ns, _ := strconv.ParseFloat(m[4], 64)
			key := m[1] + "/" + m[2] + "/" + m[3]
			runs[key] = append(runs[key], ns)
		}
		t.Logf("bench: scale go rep %d: %v, load %s", rep, runs, loadavg())
	}
	// The benchmark's sizes are its own (the plugin's fixed 100 targets and
	// 200,000 hosts), whatever BENCH_QUICK does to the other cases.
	pick := func(mode string, large bool) float64 {
		for key, xs := range runs {
			var targets, hosts int
			if n, _ := fmt.Sscanf(key, mode+"/%d/%d", &targets, &hosts); n == 2 && (targets > 1) == large {
				size := "small"
				if large {
					size = "large"
					res.ScaleExtra["go_targets"], res.ScaleExtra["go_hosts"] = targets, hosts
				}
				res.ScaleExtra["go_ns_runs_"+mode+"_"+size] = roundAll(xs, 0)
				return round(median(xs), 0)
			}
		}
		return 0
	}
	res.Scale.HitNsSmall, res.Scale.HitNsLarge = pick("spread", false), pick("spread", true)
	res.Scale.RepeatNsSmall, res.Scale.RepeatNsLarge = pick("repeat", false), pick("repeat", true)
	res.ScaleExtra["go_method"] = fmt.Sprintf("plugin/hairpin BenchmarkServeDNSTargets (ServeDNS of an A hit, index built through the watch handlers), -benchtime %s, %d interleaved runs, medians; spread walks all hosts in a shuffled order, repeat asks one name", cfg.goBenchTime, cfg.goBenchReps)
}
