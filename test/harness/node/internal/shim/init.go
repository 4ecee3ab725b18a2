package shim

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// init turns this process into the shim or its stage 2 when the agent
// started it as one. It never returns then, so the importing program's own
// initialisation and main never run in a container.
func init() {
	if path := os.Getenv(EnvSpec); path != "" {
		os.Exit(runShim(path))
	}
	if path := os.Getenv(envStage2); path != "" {
		runStage2(path, true)
	}
	if path := os.Getenv(EnvExec); path != "" {
		runStage2(path, false)
	}
}

// fail reports err on StatusFD (and stderr, the container's log) and
// returns the exit status of a container that could not start.
func fail(err error) int { return failTo(err, true) }

// failTo is fail, reporting on StatusFD only when the process has one.
func failTo(err error, status bool) int {
	msg := err.Error() + "\n"
	if status {
		_, _ = unix.Write(StatusFD, []byte(msg))
	}
	fmt.Fprint(os.Stderr, "hairpin-node: ", msg)
	return 128
}

// runShim is PID 1 of the container: it prepares the namespaces, starts
// stage 2 and supervises it.
func runShim(path string) int {
	// Namespaces joined with setns belong to the thread, and stage 2
	// inherits the thread that forks it.
	runtime.LockOSThread()
	spec, err := readSpec(path)
	if err != nil {
		return fail(err)
	}
	if spec.NetNS != "" {
		if err := joinNetNS(spec.NetNS); err != nil {
			return fail(err)
		}
	}
	if spec.Hostname != "" {
		if err := unix.Sethostname([]byte(spec.Hostname)); err != nil {
			return fail(fmt.Errorf("sethostname: %w", err))
		}
	}
	if err := buildRoot(spec); err != nil {
		return fail(err)
	}
	// Catch the signals before stage 2 exists, so none is lost.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs)
	pid, err := syscall.ForkExec("/proc/self/exe", []string{"hairpin-node-stage2"}, &syscall.ProcAttr{
		Env:   []string{envStage2 + "=" + path},
		Files: []uintptr{0, 1, 2, StatusFD},
	})
	if err != nil {
		return fail(fmt.Errorf("start stage 2: %w", err))
	}
	unix.Close(StatusFD)
	return supervise(pid, sigs)
}

func joinNetNS(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open netns: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("join netns %s: %w", path, err)
	}
	return nil
}

// supervise forwards signals to the container process, reaps every child
// and, once the container process has exited, kills the rest of the PID
// namespace and returns the container's exit status.
func supervise(pid int, sigs chan os.Signal) int {
	for sig := range sigs {
		s, ok := sig.(syscall.Signal)
		if !ok {
			continue
		}
		if s != syscall.SIGCHLD {
			if s != syscall.SIGURG && s != syscall.SIGPIPE { // the Go runtime's own
				_ = unix.Kill(pid, s)
			}
			continue
		}
		if status, done := reap(pid); done {
			_ = unix.Kill(-1, unix.SIGKILL)
			for {
				if _, err := unix.Wait4(-1, nil, 0, nil); err != nil {
					break
				}
			}
			return status
		}
	}
	return 128
}

// reap collects the exited children; done reports whether pid was one.
func reap(pid int) (status int, done bool) {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err != nil || got <= 0 {
			return status, done
		}
		if got != pid {
			continue
		}
		done = true
		switch {
		case ws.Exited():
			status = ws.ExitStatus()
		case ws.Signaled():
			status = 128 + int(ws.Signal())
		}
	}
}
