package kubectlhairpin

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	core "k8s.io/api/core/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// PodProxy reads metrics through the apiserver's pod proxy
// (GET pods/proxy), so the caller needs no route to the pod network, only
// RBAC: get on pods/proxy in the pod's namespace.
type PodProxy struct {
	Client corev1.PodsGetter
}

// Scrape implements MetricsSource. An error from the apiserver (403 when
// the caller may not proxy, 503 when the pod does not answer) is returned
// as the apiserver's status error, so callers can tell them apart.
func (p PodProxy) Scrape(ctx context.Context, pod *core.Pod, port int32) (Samples, error) {
	raw, err := p.Client.Pods(pod.Namespace).
		ProxyGet("http", pod.Name, strconv.Itoa(int(port)), "metrics", nil).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("GET pods/%s/%s:%d/proxy/metrics: %w", pod.Namespace, pod.Name, port, err)
	}
	return ParseMetrics(bytes.NewReader(raw))
}
