package cluster

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// podLogs reads the log of container in every Pod of namespace that
// selector selects, where nginx writes its access log (one JSON object per
// line, [harness.NginxLogFormat]) and its error log to the same stream, and
// returns them apart.
func (c *Cluster) podLogs(ctx context.Context, namespace, selector, container string) (access []harness.AccessLogEntry, errors string, err error) {
	pods, err := c.CP.Clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, "", err
	}
	var b strings.Builder
	for _, p := range pods.Items {
		out, err := c.Nodes[0].Logs(p.Namespace, p.Name, container)
		if err != nil {
			return nil, "", err
		}
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(l, `{"time":`):
				lines = append(lines, l)
			case l != "":
				b.WriteString(l + "\n")
			}
		}
		entries, err := harness.ParseAccessLog([]byte(strings.Join(lines, "\n")))
		if err != nil {
			return nil, "", err
		}
		access = append(access, entries...)
	}
	return access, b.String(), nil
}

// GatewayAccessLog returns the requests that the data plane of Gateway
// namespace/name logged.
func (c *Cluster) GatewayAccessLog(ctx context.Context, namespace, name string) ([]harness.AccessLogEntry, error) {
	access, _, err := c.podLogs(ctx, namespace, "gateway.networking.k8s.io/gateway-name="+name, "nginx")
	return access, err
}

// GatewayErrorLog returns what the nginx of Gateway namespace/name wrote to
// stderr, e.g. "broken header".
func (c *Cluster) GatewayErrorLog(ctx context.Context, namespace, name string) (string, error) {
	_, errors, err := c.podLogs(ctx, namespace, "gateway.networking.k8s.io/gateway-name="+name, "nginx")
	return errors, err
}
