package cluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// WaitDeployment waits until every replica of Deployment ns/name is updated
// and available, as `kubectl rollout status` does.
func (c *Cluster) WaitDeployment(ctx context.Context, ns, name string) error {
	err := harness.Poll(ctx, func(ctx context.Context) error {
		d, err := c.CP.Clientset.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		s := d.Status
		if s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want {
			return nil
		}
		return fmt.Errorf("%d/%d updated, %d available", s.UpdatedReplicas, want, s.AvailableReplicas)
	})
	if err != nil {
		return fmt.Errorf("cluster: deployment %s/%s: %w", ns, name, err)
	}
	return nil
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
