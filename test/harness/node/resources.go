package node

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// resourceValue is the downward API value of a container's resource
// request or limit, divided by the divisor and rounded up, as kubelet
// computes it; an unset limit is the node's allocatable amount.
func (n *Node) resourceValue(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	if ref.ContainerName != "" {
		c = findContainer(pod, ref.ContainerName)
	}
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef %s: no container %q", ref.Resource, ref.ContainerName)
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok {
		q, ok = n.nodeObject().Status.Allocatable[corev1.ResourceName(name)]
		if !ok {
			return "", fmt.Errorf("unsupported resource %q", ref.Resource)
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	v := math.Ceil(q.AsApproximateFloat64() / divisor.AsApproximateFloat64())
	return strconv.FormatInt(int64(v), 10), nil
}

// findContainer returns the container (or init container) called name.
func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
