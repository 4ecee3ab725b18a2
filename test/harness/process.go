package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logTail is how much of a child's output is printed when a test failed.
const logTail = 64 << 10

// Process is a child binary started by [StartProcess]. Its stdout and stderr
// go, interleaved, to one log file in the test's temp dir.
type Process struct {
	// Name labels the child in messages and log dumps.
	Name string
	// Cmd is the running command. Do not Wait on it; use [Process.Wait].
	Cmd *exec.Cmd
	// LogPath is the file that receives the child's stdout and stderr.
	LogPath string

	t       testing.TB
	logFile *os.File
	done    chan struct{} // closed when the child was reaped
	err     error         // Wait's result, valid after done

	stopOnce sync.Once
	ctx      context.Context
	cancel   context.CancelCauseFunc
}

// StartProcess starts path with args as a child of the test, in its own
// process group, and registers a cleanup that kills the group and, when the
// test failed, prints the tail of the child's output. The child inherits the
// test's environment.
func StartProcess(t testing.TB, name, path string, args ...string) *Process {
	t.Helper()
	return StartCmd(t, name, exec.Command(path, args...))
}

// StartCmd is [StartProcess] for a prepared command, e.g. with Env or Dir set.
// Stdout and Stderr are overwritten; SysProcAttr is kept (e.g. Chroot and
// Credential) and gains Setpgid and Pdeathsig.
func StartCmd(t testing.TB, name string, cmd *exec.Cmd) *Process {
	t.Helper()
	p, err := startCmd(t, name, cmd)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	return p
}

func startCmd(t testing.TB, name string, cmd *exec.Cmd) (*Process, error) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), sanitize(name)+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd.Stdout = f
	cmd.Stderr = f
	// Own process group, so that Stop reaches grandchildren too; Pdeathsig,
	// so that the kernel kills the child if the test binary dies without
	// running cleanups (e.g. the -timeout panic).
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pdeathsig = true, syscall.SIGKILL
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, cmd.Path, err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	p := &Process{Name: name, Cmd: cmd, LogPath: logPath, t: t, logFile: f, done: make(chan struct{}), ctx: ctx, cancel: cancel}
	go func() {
		p.err = cmd.Wait()
		// Done before the cancel: whoever the cancel wakes (Ready) must
		// find the child exited, or it leaves its output out.
		close(p.done)
		cancel(fmt.Errorf("%s: %w: %v", name, errExited, cmd.ProcessState))
	}()
	t.Logf("harness: started %s (pid %d): %s", name, cmd.Process.Pid, strings.Join(cmd.Args, " "))
	namedCleanup(t, "stop "+name, func() {
		p.Stop()
		if t.Failed() {
			t.Logf("harness: output of %s (%s):\n%s", name, cmd.ProcessState, p.tail(logTail))
		}
		f.Close()
	})
	return p, nil
}

// Output returns everything the child has written to stdout and stderr so far.
func (p *Process) Output() string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("<read %s: %v>", p.LogPath, err)
	}
	return string(b)
}

func (p *Process) tail(n int64) string {
	f, err := os.Open(p.LogPath)
	if err != nil {
		return fmt.Sprintf("<open %s: %v>", p.LogPath, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("<stat %s: %v>", p.LogPath, err)
	}
	prefix := ""
	if fi.Size() > n {
		if _, err := f.Seek(-n, io.SeekEnd); err != nil {
			return fmt.Sprintf("<seek %s: %v>", p.LogPath, err)
		}
		prefix = fmt.Sprintf("[... %d bytes cut ...]\n", fi.Size()-n)
	}
	b, _ := io.ReadAll(f)
	return prefix + string(b)
}

// Done is closed once the child has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the child has exited, and Wait's error if it has.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Wait waits until the child exits or ctx ends, and returns the child's exit
// error (nil for status 0).
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return fmt.Errorf("%s did not exit: %w", p.Name, context.Cause(ctx))
	}
}

// Signal sends sig to the child's whole process group.
func (p *Process) Signal(sig syscall.Signal) error {
	if err := syscall.Kill(-p.Cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s to %s: %w", sig, p.Name, err)
	}
	return nil
}

// Ready polls probe until it succeeds, ctx ends, or the child exits; in the
// last case the error says so and includes the tail of the child's output, so
// a crash at startup fails fast instead of at the deadline.
func (p *Process) Ready(ctx context.Context, probe Probe) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(p.ctx, func() { cancel(context.Cause(p.ctx)) })
	defer stop()
	if err := Poll(ctx, probe); err != nil {
		if exited, _ := p.Exited(); exited {
			return fmt.Errorf("%w\n%s output:\n%s", err, p.Name, p.tail(8<<10))
		}
		return err
	}
	return nil
}

// RequireReady is [Process.Ready] bounded by timeout that fails the test
// the child was started for, with the child's output, when probe does not
// pass. Call it from the test's goroutine.
func (p *Process) RequireReady(ctx context.Context, timeout time.Duration, probe Probe) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := p.Ready(ctx, probe); err != nil {
		p.t.Fatalf("harness: %s is not ready: %v\n%s", p.Name, err, p.tail(logTail))
	}
}

// Stop sends SIGTERM to the child's process group, waits up to 5 seconds,
// then SIGKILLs the group. It is idempotent and returns the child's exit
// error, which after a signal is usually "signal: terminated".
func (p *Process) Stop() error {
	return p.StopTimeout(5 * time.Second)
}

// StopTimeout is [Process.Stop] with a grace period of its own; 0 kills
// right away.
func (p *Process) StopTimeout(grace time.Duration) error {
	p.stopOnce.Do(func() {
		if exited, _ := p.Exited(); !exited {
			sig := syscall.SIGTERM
			if grace <= 0 {
				sig = syscall.SIGKILL
			}
			_ = p.Signal(sig)
			select {
			case <-p.done:
			case <-time.After(grace):
				p.t.Logf("harness: %s did not stop within %s; killing it", p.Name, grace)
			}
		}
		// Always kill the group: grandchildren may outlive the leader.
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
	return p.err
}

func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, name)
}
