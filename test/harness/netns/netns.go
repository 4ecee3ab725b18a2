package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Dir is where iproute2 keeps named network namespaces.
const Dir = "/run/netns"

// Prefix is the name prefix of every namespace this process creates.
var Prefix = "hpt" + strconv.Itoa(os.Getpid()) + "-"

// NS is a named network namespace created by this process.
type NS struct {
	// Name is the namespace's name under [Dir].
	Name string
	// Cgroup, when set, is the cgroup every process of the namespace
	// starts in: [NS.Command]'s, and those that others start there.
	Cgroup Cgroup

	mu     sync.Mutex
	closed bool
}

// Path returns the namespace's bind-mount file, as setns(2) and nsenter take it.
func (n *NS) Path() string { return filepath.Join(Dir, n.Name) }

// New creates the namespace Prefix+role with its loopback up.
func New(role string) (*NS, error) {
	if strings.ContainsAny(role, "/ \t\n") || role == "" {
		return nil, fmt.Errorf("netns: bad role %q", role)
	}
	n := &NS{Name: Prefix + role}
	if out, err := exec.Command("ip", "netns", "add", n.Name).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("netns: add %s: %w: %s", n.Name, err, strings.TrimSpace(string(out)))
	}
	if _, err := n.IP("link", "set", "lo", "up"); err != nil {
		_ = n.Close()
		return nil, err
	}
	return n, nil
}

// Cgroup is a cgroup that processes start in (a node's child of the
// cgroup2 hierarchy, package cgroup2).
type Cgroup interface {
	// Join makes cmd start in the cgroup.
	Join(cmd *exec.Cmd)
	// ProcsFile is a cgroup.procs that a script started by someone else
	// writes its PID into before it execs.
	ProcsFile() string
}

// Command returns cmd to run name with args inside the namespace (through
// `ip netns exec`, which also gives it /etc/netns/NAME/ files and a fresh
// /sys), in its [NS.Cgroup] if it has one.
func (n *NS) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
	if n.Cgroup != nil {
		n.Cgroup.Join(cmd)
	}
	return cmd
}

// Run runs name with args inside the namespace and returns its combined
// output; a failure names the command and includes that output.
func (n *NS) Run(name string, args ...string) (string, error) {
	out, err := n.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("netns %s: %s %s: %w: %s", n.Name, name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// IP runs `ip ARGS...` inside the namespace.
func (n *NS) IP(args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"-n", n.Name}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("netns %s: ip %s: %w: %s", n.Name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Sysctl sets a network sysctl (e.g. "net.ipv4.ip_forward") inside the
// namespace, through its own /proc/sys/net.
func (n *NS) Sysctl(key, value string) error {
	_, err := n.Run("sysctl", "-q", "-w", key+"="+value)
	return err
}

// Do runs fn on an OS thread that has entered the namespace, so that every
// socket fn opens belongs to it. The thread returns to the caller's
// namespace afterwards; if that fails, the thread is not reused.
func (n *NS) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- fmt.Errorf("netns: %w", err)
			runtime.UnlockOSThread()
			return
		}
		defer orig.Close()
		target, err := os.Open(n.Path())
		if err != nil {
			errc <- fmt.Errorf("netns: %w", err)
			runtime.UnlockOSThread()
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netns: enter %s: %w", n.Name, err)
			runtime.UnlockOSThread()
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: the runtime ends it with this
			// goroutine instead of handing it to another one.
			errc <- errors.Join(ferr, fmt.Errorf("netns: leave %s: %w", n.Name, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// WriteEtc writes /etc/netns/NAME/file, which `ip netns exec` mounts over
// /etc/file for the commands it runs (resolv.conf, hosts). [NS.Close]
// removes it.
func (n *NS) WriteEtc(file, content string) error {
	dir := filepath.Join("/etc/netns", n.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("netns %s: %w", n.Name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
		return fmt.Errorf("netns %s: %w", n.Name, err)
	}
	return nil
}

// Pids returns the processes whose network namespace is this one.
func (n *NS) Pids() ([]int, error) {
	out, err := exec.Command("ip", "netns", "pids", n.Name).Output()
	if err != nil {
		return nil, fmt.Errorf("netns %s: pids: %w", n.Name, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Close kills every process left in the namespace and deletes it, which
// also deletes the veths and every rule and route inside. It is idempotent.
func (n *NS) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	return remove(n.Name)
}

// remove kills the processes in the namespace name and deletes it.
func remove(name string) error {
	if out, err := exec.Command("ip", "netns", "pids", name).Output(); err == nil {
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
	}
	if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
		if _, serr := os.Stat(filepath.Join(Dir, name)); os.IsNotExist(serr) {
			return nil
		}
		return fmt.Errorf("netns: delete %s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	_ = os.RemoveAll(filepath.Join("/etc/netns", name))
	return nil
}

// Sweep deletes the namespaces that an earlier run of this package left
// behind: those named hpt<PID>- whose process PID no longer exists. It
// returns the names it removed.
func Sweep() ([]string, error) {
	entries, err := os.ReadDir(Dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("netns: sweep: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		pid, ok := Creator(e.Name())
		if !ok || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); err == nil || errors.Is(err, unix.EPERM) {
			continue // its creator still runs
		}
		if err := remove(e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}

// Ours returns the names of the namespaces this process created and has not
// closed yet.
func Ours() []string {
	entries, _ := os.ReadDir(Dir)
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), Prefix) {
			names = append(names, e.Name())
		}
	}
	return names
}

// Creator parses the PID out of a name made with [Prefix]: its creator.
func Creator(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "hpt")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(num)
	return pid, err == nil && pid > 0
}
