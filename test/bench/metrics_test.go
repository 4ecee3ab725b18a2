package bench

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// scrape reads the samples of a /metrics endpoint at addr.
func scrape(ctx context.Context, addr string) ([]harness.Sample, error) {
	return harness.ScrapeMetrics(ctx, "http://"+addr+"/metrics")
}

// metricSum adds the samples of metric that carry every label of match.
func metricSum(samples []harness.Sample, metric string, match map[string]string) float64 {
	v, _ := harness.MetricValue(samples, metric, match)
	return v
}

// histogram returns the cumulative bucket counts of a histogram by upper
// bound (+Inf included).
func histogram(samples []harness.Sample, metric string) map[float64]float64 {
	out := map[float64]float64{}
	for _, s := range samples {
		if s.Name != metric+"_bucket" {
			continue
		}
		if bound, err := strconv.ParseFloat(s.Labels["le"], 64); err == nil {
			out[bound] = s.Value
		}
	}
	return out
}

// histogramQuantile returns the upper bound of the bucket that holds the
// q-quantile of cumulative buckets, and the total count.
func histogramQuantile(buckets map[float64]float64, q float64) (bound, count float64) {
	bounds := make([]float64, 0, len(buckets))
	for b := range buckets {
		bounds = append(bounds, b)
		count = max(count, buckets[b])
	}
	if count == 0 {
		return 0, 0
	}
	slices.Sort(bounds)
	for _, b := range bounds {
		if buckets[b] >= q*count {
			return b, count
		}
	}
	return bounds[len(bounds)-1], count
}

func TestMetricParsing(t *testing.T) {
	text := `# HELP coredns_hairpin_hosts Hosts.
coredns_hairpin_hosts{cache="a1",kind="exact"} 150
coredns_hairpin_hosts{cache="b2",kind="exact"} 50
coredns_hairpin_hosts{cache="a1",kind="wildcard"} 7
coredns_hairpin_hosts_other{kind="exact"} 1000
coredns_hairpin_index_update_delay_seconds_bucket{le="0.001"} 10
coredns_hairpin_index_update_delay_seconds_bucket{le="0.01"} 95
coredns_hairpin_index_update_delay_seconds_bucket{le="0.1"} 99
coredns_hairpin_index_update_delay_seconds_bucket{le="+Inf"} 100
`
	samples, err := harness.ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if got := metricSum(samples, "coredns_hairpin_hosts", map[string]string{"kind": "exact"}); got != 200 {
		t.Errorf("metricSum(exact) = %v, want 200 (both caches, not the wildcard nor another metric)", got)
	}
	h := histogram(samples, "coredns_hairpin_index_update_delay_seconds")
	cases := []struct {
		q    float64
		want float64
	}{{0.05, 0.001}, {0.5, 0.01}, {0.95, 0.01}, {0.99, 0.1}, {1, math.Inf(1)}}
	for _, tc := range cases {
		if got, n := histogramQuantile(h, tc.q); got != tc.want || n != 100 {
			t.Errorf("quantile %v = %v of %v, want %v of 100", tc.q, got, n, tc.want)
		}
	}
	if got, n := histogramQuantile(map[float64]float64{}, 0.99); got != 0 || n != 0 {
		t.Errorf("empty histogram: %v of %v, want 0 of 0", got, n)
	}
}
