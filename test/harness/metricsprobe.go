package harness

import (
	"context"
	"fmt"
	"strings"
)

// MetricWant is one value a [MetricsProbe] waits for: the sum of the
// samples named Name whose labels include Labels (see [MetricValue]).
type MetricWant struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// MetricsProbe is ready when every want holds in the metrics at url.
func MetricsProbe(url string, want ...MetricWant) Probe {
	return func(ctx context.Context) error {
		samples, err := ScrapeMetrics(ctx, url)
		if err != nil {
			return err
		}
		var wrong []string
		for _, w := range want {
			if got, found := MetricValue(samples, w.Name, w.Labels); !found || got != w.Value {
				wrong = append(wrong, fmt.Sprintf("%s%v = %v (found %v), want %v", w.Name, w.Labels, got, found, w.Value))
			}
		}
		if len(wrong) > 0 {
			return fmt.Errorf("%s: %s", url, strings.Join(wrong, "; "))
		}
		return nil
	}
}
