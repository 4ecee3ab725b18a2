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
	done       chan struct{}
}

// startProcess starts the shim of inst and returns once the container
// process has been exec'ed, or with the reason it could not be.
func startProcess(inst *instance) (*process, error) {
	specPath := filepath.Join(inst.dir, "spec.json")
	if err := inst.spec.Write(specPath); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(inst.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{"hairpin-node-shim", inst.id},
		Env:        []string{shim.EnvSpec + "=" + specPath},
		Stdout:     log,
		Stderr:     log,
		ExtraFiles: []*os.File{w}, // shim.StatusFD
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC,
			// The shim is root throughout, so the kernel keeps this; a PID
			// namespace whose init dies is killed whole.
			Pdeathsig: syscall.SIGKILL,
		},
	}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return nil, fmt.Errorf("start shim: %w", err)
	}
	p := &process{inst: inst, cmd: cmd, startedAt: time.Now(), done: make(chan struct{})}
	_ = r.SetReadDeadline(time.Now().Add(shimStartTimeout))
	msg, rerr := io.ReadAll(r)
	if len(msg) > 0 || rerr != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
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
		close(p.done)
	}()
	return p, nil
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
