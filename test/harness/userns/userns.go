// Package userns runs the harness's real dataplane without root, the way
// rootless container tools do: the process re-executes itself in a new
// user namespace (user_namespaces(7)) where it is root, with its own mount
// and network namespaces. There it may create network namespaces, veths,
// iptables and nftables rules, all owned by that user namespace and so
// gone with it; the machine's own networking stays out of reach.
//
// Only the caller's uid and gid are mapped (to 0): writing a wider map
// takes newuidmap(1) and a subordinate range. An id that the map lacks
// (a Pod's runAsUser, a file owner in an image) becomes the namespace's
// root, which is the caller outside it: see ID.
package userns

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Env marks the re-executed process: it holds the directory of the
// namespace's private /etc overlay.
const Env = "HAIRPIN_USERNS"

// Inside reports whether this process runs in the user namespace that
// Reexec made.
func Inside() bool { return os.Getenv(Env) != "" }

// Reexec runs this program again with the same arguments in a new user,
// mount and network namespace, and returns its exit status. err says why
// the kernel refused the namespace (unprivileged user namespaces off, a
// limit reached); the caller then goes on without it.
func Reexec(state string) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("userns: %w", err)
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), Env+"="+state)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		// user_namespaces(7): an unprivileged process must deny
		// setgroups before it may write gid_map.
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	// The parent only waits: what would stop it is passed on (a Ctrl-C
	// reaches the child through the terminal's process group as well,
	// and the demo takes a second one calmly).
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("userns: start in a new user namespace: %w", err)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return exit.ExitCode(), nil
	default:
		return 0, fmt.Errorf("userns: %w", err)
	}
}

// Setup gives the re-executed process what iproute2 and iptables expect of
// root, inside its own mount namespace: a private tmpfs on /run (for
// /run/netns and the xtables lock) and an overlay on /etc whose upper
// layer, in state, holds /etc/netns, so `ip netns exec` finds per-namespace
// files there. The loopback of its network namespace comes up.
func Setup() error {
	state := os.Getenv(Env)
	if state == "" {
		return errors.New("userns: not inside a user namespace made by Reexec")
	}
	// First, so that the loopback story works even if the rest fails.
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("userns: loopback up: %w: %s", err, strings.TrimSpace(string(out)))
	}
	// Nothing mounted here may leak back to the machine's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("userns: make / private: %w", err)
	}
	if err := unix.Mount("tmpfs", "/run", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("userns: tmpfs on /run: %w", err)
	}
	upper, work := filepath.Join(state, "etc"), filepath.Join(state, "etc-work")
	// The upper layer's own directories are ours, so the namespace's root
	// may write in them; /etc's, owned by an unmapped root, it may not.
	for _, d := range []string{filepath.Join(upper, "netns"), work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("userns: %w", err)
		}
	}
	opts := "lowerdir=/etc,upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("overlay", "/etc", "overlay", 0, opts); err != nil {
		return fmt.Errorf("userns: overlay on /etc: %w", err)
	}
	return nil
}

// ID returns the id to use for id inside this user namespace: id itself
// when the namespace's map holds it (always outside one), else 0, the
// namespace's root, which is the caller outside it.
func ID(id uint32) uint32 {
	if !Inside() || maps().uid.holds(id) {
		return id
	}
	return 0
}

// GID is ID for group ids.
func GID(id uint32) uint32 {
	if !Inside() || maps().gid.holds(id) {
		return id
	}
	return 0
}

// idMap is one of /proc/self/{uid,gid}_map: ranges of ids inside.
type idMap [][2]uint32 // first, count

func (m idMap) holds(id uint32) bool {
	for _, r := range m {
		if id >= r[0] && id-r[0] < r[1] {
			return true
		}
	}
	return false
}

var maps = sync.OnceValue(func() struct{ uid, gid idMap } {
	return struct{ uid, gid idMap }{readMap("/proc/self/uid_map"), readMap("/proc/self/gid_map")}
})

// readMap parses user_namespaces(7)'s "ID-inside-ns ID-outside-ns length"
// lines; an unreadable map holds nothing but 0.
func readMap(path string) idMap {
	f, err := os.Open(path)
	if err != nil {
		return idMap{{0, 1}}
	}
	defer f.Close()
	var m idMap
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			continue
		}
		first, err1 := strconv.ParseUint(fields[0], 10, 32)
		count, err2 := strconv.ParseUint(fields[2], 10, 32)
		if err1 == nil && err2 == nil {
			m = append(m, [2]uint32{uint32(first), uint32(count)})
		}
	}
	return m
}

// Owner maps a chown(2) owner pair with ID and GID; -1 (leave as is) stays.
func Owner(uid, gid int) (int, int) {
	if uid >= 0 {
		uid = int(ID(uint32(uid)))
	}
	if gid >= 0 {
		gid = int(GID(uint32(gid)))
	}
	return uid, gid
}
