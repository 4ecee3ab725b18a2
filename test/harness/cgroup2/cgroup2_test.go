package cgroup2

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (mounts cgroup2, creates a cgroup)")
	}
}

// cgroupOf returns the cgroup2 path of pid.
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	p, err := Of(pid)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProcessesJoinTheChildAndLeaveWithIt starts processes in the child
// both ways a node's processes join it, and closes it under them.
func TestProcessesJoinTheChildAndLeaveWithIt(t *testing.T) {
	needRoot(t)
	g, err := New("unit")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	self := cgroupOf(t, os.Getpid())
	tests := []struct {
		name string
		cmd  func() *exec.Cmd
	}{
		{"started into it", func() *exec.Cmd {
			cmd := exec.Command("sleep", "60")
			g.Join(cmd)
			return cmd
		}},
		{"a script that writes itself into it", func() *exec.Cmd {
			return exec.Command("/bin/sh", "-c", `echo $$ > "$0" && exec sleep 60`, g.ProcsFile())
		}},
	}
	var cmds []*exec.Cmd
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := tc.cmd()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, cmd)
			want := "/" + g.Name
			var got string
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if got = cgroupOf(t, cmd.Process.Pid); got == want {
					break
				}
			}
			if got != want {
				t.Errorf("the process is in cgroup %q; want %q", got, want)
			}
			pids, err := g.Procs()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(pids, cmd.Process.Pid) {
				t.Errorf("Procs() = %v; want it to hold %d", pids, cmd.Process.Pid)
			}
		})
	}
	if got := cgroupOf(t, os.Getpid()); got != self {
		t.Errorf("the test process moved from %q to %q", self, got)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err == nil {
			t.Errorf("pid %d exited 0; want it killed by Close", cmd.Process.Pid)
		}
	}
	ours, err := Ours()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ours, g.Name) {
		t.Errorf("%s is still in the hierarchy after Close", g.Name)
	}
}

// TestSweepRemovesWhatAGoneRunLeft leaves a child named for a process
// that no longer exists, with a process in it, and sweeps.
func TestSweepRemovesWhatAGoneRunLeft(t *testing.T) {
	needRoot(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	root, err := openRoot()
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	stale := fmt.Sprintf("hpt%d-stale", gone.Process.Pid)
	if err := unix.Mkdirat(int(root.Fd()), stale, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = remove(root, stale) })
	fd, err := unix.Openat(int(root.Fd()), stale, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	left := exec.Command("sleep", "60")
	left.SysProcAttr = &unix.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	err = left.Start()
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	mine, err := New("mine")
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	removed, err := Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, stale) {
		t.Errorf("Sweep() removed %v; want %s among them", removed, stale)
	}
	if slices.Contains(removed, mine.Name) {
		t.Errorf("Sweep() removed %s, whose creator runs", mine.Name)
	}
	if err := left.Wait(); err == nil {
		t.Errorf("the process left in %s exited 0; want it killed", stale)
	}
}
