package node

import (
	"fmt"
	"os"
)

// Logs returns what the container's current instance has written to
// stdout and stderr so far, as `kubectl logs` shows it.
func (n *Node) Logs(namespace, pod, container string) (string, error) {
	c, err := n.container(namespace, pod, container)
	if err != nil {
		return "", err
	}
	path, _ := c.logPaths()
	if path == "" {
		return "", fmt.Errorf("node: container %s of pod %s/%s has not started", container, namespace, pod)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("node: logs: %w", err)
	}
	return string(b), nil
}

// logPaths are the log files of the current and the previous instance.
func (c *container) logPaths() (current, previous string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logPath, c.prevLog
}

// ContainerPID returns the host PID of the container's process (under its
// shim), for tests that look at /proc.
func (n *Node) ContainerPID(namespace, pod, container string) (int, bool) {
	c, err := n.container(namespace, pod, container)
	if err != nil {
		return 0, false
	}
	proc := c.running()
	if proc == nil || proc.exited() || proc.pid == 0 {
		return 0, false
	}
	return proc.pid, true
}
