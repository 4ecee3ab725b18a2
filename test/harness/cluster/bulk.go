package cluster

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BulkFile writes size random bytes into ic's controller Pod, served as
// /bulk/NAME on each of its hosts, and returns their SHA-256 in hex: the body
// of a download long enough to outlive a rollout, checked byte for byte.
func (c *Cluster) BulkFile(ctx context.Context, ic IngressController, name string, size int64) (string, error) {
	pods, err := c.CP.Clientset.CoreV1().Pods(ic.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=controller"})
	if err != nil {
		return "", err
	}
	if len(pods.Items) == 0 {
		return "", fmt.Errorf("cluster: %s has no controller pods", ic.Namespace)
	}
	// Random bytes differ from Pod to Pod; the clusters run one.
	if len(pods.Items) > 1 {
		return "", fmt.Errorf("cluster: %s has %d controller pods; BulkFile writes one", ic.Namespace, len(pods.Items))
	}
	p := pods.Items[0]
	script := fmt.Sprintf("mkdir -p /tmp/bulk && head -c %d /dev/urandom > /tmp/bulk/%s && sha256sum /tmp/bulk/%s", size, name, name)
	out, errOut, err := c.Nodes[0].Exec(ctx, p.Namespace, p.Name, "controller", "sh", "-c", script)
	if err != nil {
		return "", fmt.Errorf("cluster: bulk file in %s/%s: %w: %s", p.Namespace, p.Name, err, errOut)
	}
	sum, _, _ := strings.Cut(strings.TrimSpace(out), " ")
	if len(sum) != 64 {
		return "", fmt.Errorf("cluster: bulk file in %s/%s: sha256sum printed %q", p.Namespace, p.Name, out)
	}
	return sum, nil
}
