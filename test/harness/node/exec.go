package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/coredns-hairpin/hairpin/test/harness/node/internal/shim"
)

// Exec runs cmd in a running container as kubectl exec does: in the
// container's network, mount, UTS and IPC namespaces and root (its
// resolv.conf, its volumes), as its user, with its environment. A command
// that ran and exited non-zero returns its output and an error naming the
// exit status.
func (n *Node) Exec(ctx context.Context, namespace, pod, container string, cmd ...string) (stdout, stderr string, err error) {
	c, err := n.container(namespace, pod, container)
	if err != nil {
		return "", "", err
	}
	if len(cmd) == 0 {
		return "", "", errors.New("node: exec: no command")
	}
	out, errOut, code, err := n.run(ctx, c, cmd, nil)
	if err == nil && code != 0 {
		err = fmt.Errorf("node: exec %q in %s/%s/%s: exit status %d", cmd, namespace, pod, container, code)
	}
	return out, errOut, err
}

// run executes cmd in c's current instance and returns its output and exit
// code; err is for a command that could not run at all.
func (n *Node) run(ctx context.Context, c *container, cmd []string, stdin io.Reader) (stdout, stderr string, code int, err error) {
	var o, e bytes.Buffer
	code, err = n.execStreams(ctx, c, cmd, stdin, &o, &e)
	return o.String(), e.String(), code, err
}

// execStreams runs cmd in c with the given streams: nsenter(1) enters the
// container process's mount, UTS, IPC, network and PID namespaces (so
// /proc/self is the command's own) and starts this binary's stage 2 there,
// which chroots into the container's root and takes its user, groups,
// capabilities and no_new_privs exactly as the container process did.
func (n *Node) execStreams(ctx context.Context, c *container, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	c.mu.Lock()
	proc := c.proc
	c.mu.Unlock()
	if proc == nil || proc.exited() || proc.pid == 0 {
		return 0, fmt.Errorf("container %s is not running", c.spec.Name)
	}
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("exec: %w", err)
	}
	spec := proc.inst.spec
	spec.Args = cmd
	f, err := os.CreateTemp(proc.inst.dir, "exec-*.json")
	if err != nil {
		return 0, fmt.Errorf("exec: %w", err)
	}
	f.Close()
	defer os.Remove(f.Name())
	if err := spec.Write(f.Name()); err != nil {
		return 0, err
	}
	x := exec.CommandContext(ctx, "nsenter", "--target", strconv.Itoa(proc.pid),
		"--mount", "--uts", "--ipc", "--net", "--pid", "--", self)
	x.Env = []string{shim.EnvExec + "=" + f.Name()}
	x.Stdin, x.Stdout, x.Stderr = stdin, stdout, stderr
	// nsenter forks to enter the PID namespace; its process group lets a
	// cancelled context kill the command too.
	x.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if cg := n.cfg.NodeNS.Cgroup; cg != nil {
		cg.Join(x) // the command is the Pod's, so the node's
	}
	x.Cancel = func() error { return syscall.Kill(-x.Process.Pid, syscall.SIGKILL) }
	err = x.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && ctx.Err() == nil {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("exec %q in %s: %w", cmd, c.spec.Name, err)
	}
	return 0, nil
}

// container finds a container of a Pod running on this node.
func (n *Node) container(namespace, pod, name string) (*container, error) {
	p := n.pod(namespace, pod)
	if p == nil {
		return nil, fmt.Errorf("node: no pod %s/%s on node %s", namespace, pod, n.cfg.NodeName)
	}
	for _, c := range p.all() {
		if c.spec.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("node: pod %s/%s has no container %q", namespace, pod, name)
}
