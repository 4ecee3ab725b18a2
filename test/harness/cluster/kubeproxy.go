package cluster

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// KubeProxySyncedAt is when kube-proxy last finished writing its rules
// (kubeproxy_sync_proxy_rules_last_timestamp_seconds on its metrics port):
// a change to a Service or its endpoints is in the dataplane once that is
// later than the change.
func (c *Cluster) KubeProxySyncedAt(ctx context.Context) (time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:10249/metrics", nil)
	if err != nil {
		return time.Time{}, err
	}
	resp, err := c.HTTPFromNode().Do(req)
	if err != nil {
		return time.Time{}, fmt.Errorf("cluster: kube-proxy metrics: %w", err)
	}
	defer resp.Body.Close()
	samples, err := harness.ParseMetrics(resp.Body)
	if err != nil {
		return time.Time{}, fmt.Errorf("cluster: kube-proxy metrics: %w", err)
	}
	for _, s := range samples {
		if s.Name == "kubeproxy_sync_proxy_rules_last_timestamp_seconds" {
			sec, frac := math.Modf(s.Value)
			return time.Unix(int64(sec), int64(frac*1e9)), nil
		}
	}
	return time.Time{}, fmt.Errorf("cluster: kube-proxy reports no last sync")
}

// HTTPFromNode is an HTTP client that connects from inside the node, as
// kubelet's probes and a node's Prometheus do.
func (c *Cluster) HTTPFromNode() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) { return c.DialNode(ctx, addr) },
	}}
}
