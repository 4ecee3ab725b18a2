package node

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness/netns"
	"github.com/coredns-hairpin/hairpin/test/harness/node/internal/shim"
)

// shimStartTimeout bounds a shim's setup, up to the container's execve.
const shimStartTimeout = 30 * time.Second

// process is a running container instance: its shim, PID 1 of the
// container's PID namespace, and the container process under it.
type process struct {
	inst       *instance
	cmd        *exec.Cmd
	pid        int // the container process on the host
	startedAt  time.Time
	finishedAt time.Time
	exit       int32
	// out is the instance's stdout and stderr; stdin is the write end of
	// its stdin pipe when the container has one (stdin: true), closed
	// after the first attach with stdinOnce, and when the process ends.
	out   *output
	stdin *os.File
	done  chan struct{} // closed once the process has exited and its output is in the log
}

// startProcess starts the shim of inst, in cg when it is set, and returns once the container
// process has been exec'ed, or with the reason it could not be.
func startProcess(inst *instance, cg netns.Cgroup) (*process, error) {
	specPath := filepath.Join(inst.dir, "spec.json")
	if err := inst.spec.Write(specPath); err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out, stdoutW, stderrW, err := newOutput(inst.logPath)
	if err != nil {
		w.Close()
		return nil, err
	}
	// The write ends are the process's alone once it has started: the
	// output ends when the last process of the container has gone.
	parentEnds := []*os.File{w, stdoutW, stderrW}
	p := &process{inst: inst, out: out, done: make(chan struct{})}
	var stdinR *os.File
	if inst.stdin {
		if stdinR, p.stdin, err = os.Pipe(); err != nil {
			closeAll(parentEnds)
			<-out.done
			return nil, err
		}
		parentEnds = append(parentEnds, stdinR)
	}
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{"hairpin-node-shim", inst.id},
		Env:        []string{shim.EnvSpec + "=" + specPath},
		Stdin:      stdinR, // nil: /dev/null
		Stdout:     stdoutW,
		Stderr:     stderrW,
		ExtraFiles: []*os.File{w}, // shim.StatusFD
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC,
			// The shim is root throughout, so the kernel keeps this; a PID
			// namespace whose init dies is killed whole.
			Pdeathsig: syscall.SIGKILL,
		},
	}
	// hostNetwork or not, a Pod's processes are the node's: they start in
	// its cgroup, where its dataplane's socket programs act.
	if cg != nil {
		cg.Join(cmd)
	}
	err = cmd.Start()
	closeAll(parentEnds)
	if err != nil {
		p.closeStdin()
		<-out.done
		return nil, fmt.Errorf("start shim: %w", err)
	}
	p.cmd, p.startedAt = cmd, time.Now()
	_ = r.SetReadDeadline(time.Now().Add(shimStartTimeout))
	msg, rerr := io.ReadAll(r)
	if len(msg) > 0 || rerr != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		p.closeStdin()
		<-out.done
		if rerr != nil {
			return nil, fmt.Errorf("container did not start: %w", rerr)
		}
		return nil, errors.New(strings.TrimSpace(string(msg)))
	}
	p.pid = childOf(cmd.Process.Pid)
	go func() {
		_ = cmd.Wait()
		p.finishedAt = time.Now()
		p.exit = int32(cmd.ProcessState.ExitCode())
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.exit = 128 + int32(ws.Signal())
		}
		p.closeStdin()
		// The shim kills its PID namespace before it exits, so every
		// writer of the pipes is gone: the drains end promptly.
		<-out.done
		close(p.done)
	}()
	return p, nil
}

// closeStdin closes the node's end of the process's stdin pipe, if any:
// the container reads EOF.
func (p *process) closeStdin() {
	if p.stdin != nil {
		_ = p.stdin.Close()
	}
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// childOf is the first child of pid: the container process under its shim.
func childOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	child, _ := strconv.Atoi(f[0])
	return child
}

// stop sends SIGTERM (which the shim passes on), and after grace SIGKILL to
// the shim, which takes the whole PID namespace with it.
func (p *process) stop(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
