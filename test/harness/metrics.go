package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Sample is one sample of a Prometheus text exposition: a series and its
// value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ScrapeMetrics GETs url (a child's /metrics, e.g. CoreDNS's prometheus
// plugin or the proxy's health port) and parses the text exposition format.
func ScrapeMetrics(ctx context.Context, url string) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	samples, err := ParseMetrics(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return samples, nil
}

// ParseMetrics parses the Prometheus text exposition format: comments are
// skipped, timestamps ignored.
func ParseMetrics(r io.Reader) ([]Sample, error) {
	var samples []Sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return samples, fmt.Errorf("metrics line %d %q: %w", n, line, err)
		}
		samples = append(samples, s)
	}
	return samples, sc.Err()
}

func parseSample(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return s, fmt.Errorf("no value")
	}
	s.Name, line = line[:i], line[i:]
	if line[0] == '{' {
		rest, err := parseLabels(line[1:], s.Labels)
		if err != nil {
			return s, err
		}
		line = rest
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return s, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("value: %w", err)
	}
	s.Value = v
	return s, nil
}

// parseLabels reads `name="value",...}` into labels and returns what
// follows the closing brace. Values may hold \\, \" and \n escapes.
func parseLabels(in string, labels map[string]string) (string, error) {
	for {
		in = strings.TrimLeft(in, " ,")
		if strings.HasPrefix(in, "}") {
			return in[1:], nil
		}
		eq := strings.Index(in, `="`)
		if eq <= 0 {
			return "", fmt.Errorf("label without a quoted value")
		}
		name := strings.TrimSpace(in[:eq])
		in = in[eq+2:]
		var v strings.Builder
		closed := false
		for i := 0; i < len(in); i++ {
			c := in[i]
			if c == '\\' && i+1 < len(in) {
				i++
				switch in[i] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(in[i])
				}
				continue
			}
			if c == '"' {
				in, closed = in[i+1:], true
				break
			}
			v.WriteByte(c)
		}
		if !closed {
			return "", fmt.Errorf("label %s: unterminated value", name)
		}
		labels[name] = v.String()
	}
}

// MetricValue returns the sum of the samples named name whose labels include
// every label in labels, and whether there was any. Summing spares the
// caller labels it cannot know, such as a cache id.
func MetricValue(samples []Sample, name string, labels map[string]string) (float64, bool) {
	var sum float64
	found := false
next:
	for _, s := range samples {
		if s.Name != name {
			continue
		}
		for k, v := range labels {
			if s.Labels[k] != v {
				continue next
			}
		}
		sum += s.Value
		found = true
	}
	return sum, found
}
