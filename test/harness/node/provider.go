package node

import (
	"context"
	"fmt"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// provider is the Node as virtual-kubelet's PodLifecycleHandler and
// PodNotifier. Its calls only start or signal a Pod's own goroutine, so
// virtual-kubelet's workers never wait for processes.
type provider struct{ n *Node }

// CreatePod starts running a Pod bound to this node.
func (pr *provider) CreatePod(_ context.Context, obj *corev1.Pod) error {
	n := pr.n
	if n.ctx.Err() != nil {
		return fmt.Errorf("node %s is stopping", n.cfg.NodeName)
	}
	key := obj.Namespace + "/" + obj.Name
	n.mu.Lock()
	defer n.mu.Unlock()
	if old, ok := n.pods[key]; ok {
		if old.object().UID == obj.UID {
			return nil
		}
		// A Pod of the same name still stopping: virtual-kubelet retries.
		return fmt.Errorf("pod %s: the previous pod of this name is still stopping", key)
	}
	p := newPod(n, obj.DeepCopy())
	n.pods[key] = p
	go p.run()
	return nil
}

// UpdatePod takes the Pod's new metadata (labels and annotations, for the
// downward API); kubelet applies no other change to a running Pod but a
// new image, which this node does not roll.
func (pr *provider) UpdatePod(_ context.Context, obj *corev1.Pod) error {
	p := pr.n.pod(obj.Namespace, obj.Name)
	if p == nil || p.object().UID != obj.UID {
		return errdefs.NotFoundf("pod %s/%s is not on this node", obj.Namespace, obj.Name)
	}
	p.mu.Lock()
	p.obj = obj.DeepCopy()
	p.mu.Unlock()
	p.kickVolumes()
	p.markChanged()
	return nil
}

// DeletePod stops the Pod gracefully: SIGTERM, its grace period (capped),
// SIGKILL; once everything is gone, the Pod object is deleted, as kubelet
// does after a graceful deletion.
func (pr *provider) DeletePod(_ context.Context, obj *corev1.Pod) error {
	p := pr.n.pod(obj.Namespace, obj.Name)
	if p == nil || p.object().UID != obj.UID {
		return errdefs.NotFoundf("pod %s/%s is not on this node", obj.Namespace, obj.Name)
	}
	grace := 30 * time.Second
	switch {
	case obj.DeletionGracePeriodSeconds != nil:
		grace = time.Duration(*obj.DeletionGracePeriodSeconds) * time.Second
	case obj.Spec.TerminationGracePeriodSeconds != nil:
		grace = time.Duration(*obj.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	p.mu.Lock()
	p.deleting = p.deleting || obj.DeletionTimestamp != nil
	p.mu.Unlock()
	p.terminate(grace)
	return nil
}

// GetPod returns the Pod with the status observed here.
func (pr *provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	p := pr.n.pod(namespace, name)
	if p == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, name)
	}
	return p.apiPod(), nil
}

// GetPodStatus returns the status observed here.
func (pr *provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	obj, err := pr.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &obj.Status, nil
}

// GetPods returns every Pod on this node.
func (pr *provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, p := range pr.n.podsIn("") {
		out = append(out, p.apiPod())
	}
	return out, nil
}

// NotifyPods registers virtual-kubelet's status callback.
func (pr *provider) NotifyPods(_ context.Context, cb func(*corev1.Pod)) {
	pr.n.mu.Lock()
	pr.n.notify = cb
	pr.n.mu.Unlock()
}

// forget drops a Pod that is gone.
func (n *Node) forget(p *pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.pods[p.key] == p {
		delete(n.pods, p.key)
	}
}

// deleteObject removes the Pod object once its containers are gone, with
// grace 0 and its UID as precondition, as kubelet's status manager does.
func (n *Node) deleteObject(p *pod) {
	obj := p.object()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := *metav1.NewDeleteOptions(0)
	opts.Preconditions = metav1.NewUIDPreconditions(string(obj.UID))
	err := n.cfg.Client.CoreV1().Pods(obj.Namespace).Delete(ctx, obj.Name, opts)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		n.cfg.logf("delete pod %s: %v", p.key, err)
	}
}

// probeGrace is the grace period of a restart a probe asked for: the
// probe's terminationGracePeriodSeconds, else the Pod's (capped).
func (n *Node) probeGrace(obj *corev1.Pod, pr *corev1.Probe) time.Duration {
	grace := 30 * time.Second
	switch {
	case pr != nil && pr.TerminationGracePeriodSeconds != nil:
		grace = time.Duration(*pr.TerminationGracePeriodSeconds) * time.Second
	case obj.Spec.TerminationGracePeriodSeconds != nil:
		grace = time.Duration(*obj.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return min(grace, n.cfg.MaxGracePeriod)
}
