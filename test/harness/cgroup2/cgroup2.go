package cgroup2

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// Group is a child of the cgroup2 hierarchy created by this process.
type Group struct {
	// Name is the child's name under the hierarchy's root; "/"+Name is
	// what /proc/PID/cgroup shows for a process in it.
	Name string

	root *os.File // the hierarchy's root, which holds the mount
	dir  *os.File // the child

	mu     sync.Mutex
	closed bool
}

// New creates the child [netns.Prefix]+role: one name prefix for all that a
// run creates.
func New(role string) (*Group, error) {
	if strings.ContainsAny(role, "/ \t\n") || role == "" {
		return nil, fmt.Errorf("cgroup2: bad role %q", role)
	}
	root, err := openRoot()
	if err != nil {
		return nil, err
	}
	g := &Group{Name: netns.Prefix + role, root: root}
	if err := unix.Mkdirat(int(root.Fd()), g.Name, 0o755); err != nil {
		root.Close()
		return nil, fmt.Errorf("cgroup2: create %s: %w", g.Name, err)
	}
	fd, err := unix.Openat(int(root.Fd()), g.Name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Unlinkat(int(root.Fd()), g.Name, unix.AT_REMOVEDIR)
		root.Close()
		return nil, fmt.Errorf("cgroup2: open %s: %w", g.Name, err)
	}
	g.dir = os.NewFile(uintptr(fd), g.Name)
	return g, nil
}

// openRoot opens the root of the cgroup2 hierarchy, mounted for a helper
// in a mount namespace of its own. The descriptor keeps that mount alive
// after the helper and its namespace are gone.
func openRoot() (*os.File, error) {
	dir, err := os.MkdirTemp("", "cgroup2-")
	if err != nil {
		return nil, fmt.Errorf("cgroup2: %w", err)
	}
	defer os.Remove(dir)
	// The helper says it has mounted, then waits for its stdin to close.
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
		`mount -t cgroup2 cgroup2 "$0" && echo mounted && exec cat >/dev/null`, dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("cgroup2: %w", err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("cgroup2: %w", err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cgroup2: mount the hierarchy: %w", err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "mounted" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("cgroup2: mount the hierarchy: %s", strings.TrimSpace(stderr.String()))
	}
	path := fmt.Sprintf("/proc/%d/root%s", cmd.Process.Pid, dir)
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("cgroup2: open the hierarchy: %w", err)
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		f.Close()
		return nil, fmt.Errorf("cgroup2: %s is not a cgroup2 mount (%v)", path, err)
	}
	return f, nil
}

// FD returns the child's directory descriptor, as
// [syscall.SysProcAttr.CgroupFD] takes it.
func (g *Group) FD() int { return int(g.dir.Fd()) }

// Join makes cmd start in the child (clone3's CLONE_INTO_CGROUP): the
// process is never in another cgroup, and every process it forks stays.
func (g *Group) Join(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, g.FD()
}

// ProcsFile is a path to the child's cgroup.procs that any process of the
// machine can write its PID into (a script that is started by someone
// else, before it execs): through this process's descriptor of the child,
// which /proc resolves.
func (g *Group) ProcsFile() string {
	return fmt.Sprintf("/proc/%d/fd/%d/cgroup.procs", os.Getpid(), g.FD())
}

// Path is a path of the child for tools that take one (bpftool cgroup
// show): through this process's descriptor of it.
func (g *Group) Path() string { return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), g.FD()) }

// Procs returns the processes in the child.
func (g *Group) Procs() ([]int, error) { return procs(g.root, g.Name) }

// Close kills every process left in the child and removes it. It is
// idempotent.
func (g *Group) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	g.dir.Close()
	defer g.root.Close()
	return remove(g.root, g.Name)
}

// procs reads the PIDs in cgroup.procs of the child name of root.
func procs(root *os.File, name string) ([]int, error) {
	fd, err := unix.Openat(int(root.Fd()), name+"/cgroup.procs", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cgroup2: %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), "cgroup.procs")
	defer f.Close()
	var pids []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if pid, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, sc.Err()
}

// removeTimeout bounds the wait for killed processes to leave a child:
// rmdir fails with EBUSY while one remains.
const removeTimeout = 10 * time.Second

// remove kills the processes of the child name of root (cgroup.kill, which
// also takes those forked meanwhile) and removes it.
func remove(root *os.File, name string) error {
	if fd, err := unix.Openat(int(root.Fd()), name+"/cgroup.kill", unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
		_, _ = unix.Write(fd, []byte("1"))
		unix.Close(fd)
	}
	deadline := time.Now().Add(removeTimeout)
	for {
		err := unix.Unlinkat(int(root.Fd()), name, unix.AT_REMOVEDIR)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			left, _ := procs(root, name)
			return fmt.Errorf("cgroup2: remove %s: %w (processes left: %v)", name, err, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Of returns the cgroup2 path of process pid, as /proc/PID/cgroup gives
// it ("0::PATH"): "/"+[Group.Name] for a process in a child of ours.
func Of(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", fmt.Errorf("cgroup2: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("cgroup2: /proc/%d/cgroup has no cgroup2 line", pid)
}
