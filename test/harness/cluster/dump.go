package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// dumpOnFailure logs, when t failed, every Pod's status and the tail of its
// containers' logs, and the tail of kube-proxy's: what one needs to tell
// why a step of a story did not happen.
func (c *Cluster) dumpOnFailure(t testing.TB) {
	if !t.Failed() || c.CP == nil || c.Nodes[0].Node == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods, err := c.CP.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("cluster: list pods: %v", err)
		return
	}
	for _, p := range pods.Items {
		var conds []string
		for _, cond := range p.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s", cond.Type, cond.Status))
		}
		t.Logf("cluster: pod %s/%s %s ip=%s %s %s", p.Namespace, p.Name, p.Status.Phase, p.Status.PodIP, strings.Join(conds, ","), p.Status.Message)
		for _, cs := range p.Status.ContainerStatuses {
			t.Logf("cluster:   container %s ready=%v restarts=%d state=%+v", cs.Name, cs.Ready, cs.RestartCount, cs.State)
			out, err := c.Nodes[0].Logs(p.Namespace, p.Name, cs.Name)
			if err != nil {
				t.Logf("cluster:   logs: %v", err)
				continue
			}
			if len(out) > 4096 {
				out = out[len(out)-4096:]
			}
			t.Logf("cluster:   log of %s:\n%s", cs.Name, out)
		}
	}
}
