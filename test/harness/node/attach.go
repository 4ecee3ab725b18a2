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
// client's ends, with stdinOnce), and what the container writes to stdout
// and stderr from the attach on comes back on the client's, until the
// process has ended.
//
// As kubelet's, an attach shows what is written after it, or after the
// logs kubectl run -i printed just before it ([output.attachFrom]), so a
// quick command's output (dig's) is printed exactly once, whether it was
// written before those logs, between them and the attach, or after; an
// attach to an instance that has ended returns once it has handed that
// over.
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
	return proc.out.copyTo(ctx, proc.out.attachFrom(), aio.Stdout(), aio.Stderr())
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
