package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// scrape fetches the Prometheus text exposition at addr.
func scrape(ctx context.Context, addr string) (string, error) {
	b, code, err := httpGet(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("metrics at %s: HTTP %d", addr, code)
	}
	return string(b), nil
}

// metricSum adds the samples of metric whose labels contain every one of
// match (`kind="exact"`).
func metricSum(text, metric string, match ...string) float64 {
	sum := 0.0
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, metric+"{") && !strings.HasPrefix(l, metric+" ") {
			continue
		}
		labels, value, ok := strings.Cut(l, "} ")
		if !ok {
			labels, value, _ = strings.Cut(l, " ")
		}
		matched := true
		for _, m := range match {
			matched = matched && strings.Contains(labels, m)
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); matched && err == nil {
			sum += v
		}
	}
	return sum
}

// histogram returns the cumulative bucket counts of a histogram by upper
// bound (+Inf included).
func histogram(text, metric string) map[float64]float64 {
	out := map[float64]float64{}
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, metric+"_bucket{") {
			continue
		}
		_, rest, _ := strings.Cut(l, `le="`)
		le, value, _ := strings.Cut(rest, `"} `)
		bound, err1 := strconv.ParseFloat(le, 64)
		v, err2 := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err1 == nil && err2 == nil {
			out[bound] = v
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
	if got := metricSum(text, "coredns_hairpin_hosts", `kind="exact"`); got != 200 {
		t.Errorf("metricSum(exact) = %v, want 200 (both caches, not the wildcard nor another metric)", got)
	}
	h := histogram(text, "coredns_hairpin_index_update_delay_seconds")
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
