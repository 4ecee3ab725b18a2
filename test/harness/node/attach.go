package node

import (
	"context"
	"fmt"
	"io"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"
)

// attachHandler connects a client to a container's own standard streams,
// as kubelet does for `kubectl attach` and `kubectl run -i`: the client's
// stdin goes to the container's stdin pipe (stdin: true; closed when the
// client's ends, with stdinOnce), and the container's stdout and stderr
// come back on the client's until the process has ended.
//
// Unlike kubelet, it sends the instance's output from its start: kubectl
// run -i attaches only once the Pod is Running and Ready, and a command as
// quick as dig has printed by then, or has ended (kubectl then reads the
// logs only if it saw the Pod completed first). So an attach shows the
// whole output of the latest instance, running or just ended, exactly
// once, whichever way the race went.
func (n *Node) attachHandler(ctx context.Context, namespace, pod, container string, aio api.AttachIO) error {
	c, err := n.container(namespace, pod, container)
	if err != nil {
		return err
	}
	if aio.TTY() {
		return fmt.Errorf("container %s has no TTY: this node allocates none", container)
	}
	c.mu.Lock()
	proc := c.recent
	c.mu.Unlock()
	if proc == nil {
		return fmt.Errorf("container %s in pod %s/%s has not started", container, namespace, pod)
	}
	if in := aio.Stdin(); in != nil {
		go proc.feed(in, c.spec.StdinOnce)
	}
	// A stream the client did not ask for is a nil interface: dropped.
	return proc.out.copyTo(ctx, aio.Stdout(), aio.Stderr())
}

// feed copies an attached client's stdin to the process's stdin pipe;
// with once (stdinOnce), the pipe is closed when the client's stdin ends,
// so the container reads EOF. A container without stdin gets nothing.
func (p *process) feed(in io.Reader, once bool) {
	if p.stdin == nil {
		_, _ = io.Copy(io.Discard, in)
		return
	}
	_, _ = io.Copy(p.stdin, in)
	if once {
		p.closeStdin()
	}
}
