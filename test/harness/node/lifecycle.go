package node

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// runHook runs a postStart or preStop handler as kubelet does: a command
// in the container, an HTTP GET from the node, or a sleep, within timeout
// or until ctx ends. ctx is not the Pod's: a preStop hook runs once that
// has ended.
func (n *Node) runHook(ctx context.Context, c *container, h *corev1.LifecycleHandler, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case h.Exec != nil:
		_, errOut, code, err := n.run(ctx, c, h.Exec.Command, nil)
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("command %q exited with %d: %s", h.Exec.Command, code, errOut)
		}
		return nil
	case h.HTTPGet != nil:
		return n.httpProbe(ctx, h.HTTPGet, &c.spec, c.p.podIP().String())
	case h.Sleep != nil:
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(h.Sleep.Seconds) * time.Second):
		}
		return nil
	}
	return fmt.Errorf("lifecycle hook has no handler")
}

// postStart runs the container's postStart hook, if any; a failure kills
// the container, as kubelet does (FailedPostStartHook). ctx is the
// instance's: once it has ended, a failure (the exec found no process) is
// no verdict, and must not restart the next instance.
func (c *container) postStart(ctx context.Context) {
	if c.spec.Lifecycle == nil || c.spec.Lifecycle.PostStart == nil {
		return
	}
	if err := c.p.n.runHook(ctx, c, c.spec.Lifecycle.PostStart, 30*time.Second); err != nil && ctx.Err() == nil {
		c.event(corev1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed: %v", err)
		select {
		case c.kill <- restart{reason: fmt.Sprintf("PostStartHook failed: %v", err)}:
		default:
		}
	}
}

// stop runs the preStop hook within the grace period, then stops the
// process with what is left of it.
func (c *container) stop(proc *process, grace time.Duration) {
	start := time.Now()
	if l := c.spec.Lifecycle; l != nil && l.PreStop != nil {
		if err := c.p.n.runHook(context.Background(), c, l.PreStop, grace); err != nil {
			c.event(corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed: %v", err)
		}
	}
	proc.stop(max(grace-time.Since(start), 0))
}
