package shim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// runStage2 becomes the container process: chroot, credentials and
// capabilities as runc sets them, then execve. Credentials, capabilities
// and no_new_privs are set with raw syscalls on this one locked thread,
// the one that calls execve, so the Go runtime's other threads (which die
// at execve) need not follow.
func runStage2(path string, status bool) {
	runtime.LockOSThread()
	if status {
		unix.CloseOnExec(StatusFD)
	}
	err := stage2(path)
	os.Exit(failTo(err, status))
}

func stage2(path string) error {
	s, err := readSpec(path)
	if err != nil {
		return err
	}
	// Read before the chroot hides the machine's /proc.
	denied := setgroupsDenied()
	if err := unix.Chroot(s.Root); err != nil {
		return fmt.Errorf("chroot %s: %w", s.Root, err)
	}
	dir := s.Dir
	if dir == "" {
		dir = "/"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("working dir: %w", err)
	}
	if err := unix.Chdir(dir); err != nil {
		return fmt.Errorf("working dir: %w", err)
	}
	argv0, err := lookPath(s.Args[0], s.Env)
	if err != nil {
		return err
	}
	if err := dropBounding(s.Caps); err != nil {
		return err
	}
	if err := setCreds(s, denied); err != nil {
		return err
	}
	if err := setCaps(s.Caps); err != nil {
		return err
	}
	if s.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no_new_privs: %w", err)
		}
	}
	err = syscall.Exec(argv0, s.Args, s.Env)
	return fmt.Errorf("exec %s: %w", argv0, err)
}

// lookPath finds name in the PATH of env, as the container sees it.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}

func dropBounding(keep []uint) error {
	last, err := lastCap()
	if err != nil {
		return err
	}
	kept := capMask(keep)
	for c := uint(0); c <= last; c++ {
		if kept[c/32]&(1<<(c%32)) != 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	return nil
}

func lastCap() (uint, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 40, nil // CAP_CHECKPOINT_RESTORE, where /proc is not the host's
	}
	var n uint
	if _, err := fmt.Sscan(string(b), &n); err != nil {
		return 0, fmt.Errorf("cap_last_cap: %w", err)
	}
	return n, nil
}

// setCreds switches this thread to the container's user, keeping its
// permitted capabilities for setCaps to narrow.
func setCreds(s *Spec, setgroupsDenied bool) error {
	if err := unix.Prctl(unix.PR_SET_KEEPCAPS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("keepcaps: %w", err)
	}
	groups := s.Groups
	if len(groups) == 0 {
		groups = []uint32{s.GID}
	}
	if !setgroupsDenied {
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(unsafe.Pointer(&groups[0])), 0); e != 0 {
			return fmt.Errorf("setgroups: %w", e)
		}
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(s.GID), uintptr(s.GID), uintptr(s.GID)); e != 0 {
		return fmt.Errorf("setresgid %d: %w", s.GID, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(s.UID), uintptr(s.UID), uintptr(s.UID)); e != 0 {
		return fmt.Errorf("setresuid %d: %w", s.UID, e)
	}
	return nil
}

// setCaps leaves caps permitted and effective, and none inheritable (as
// containerd does since CVE-2022-24769). A non-root process loses them at
// execve unless the file grants them; with no_new_privs a file can grant
// only these.
func setCaps(caps []uint) error {
	m := capMask(caps)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{
		{Effective: m[0], Permitted: m[0]},
		{Effective: m[1], Permitted: m[1]},
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

func capMask(caps []uint) [2]uint32 {
	var m [2]uint32
	for _, c := range caps {
		if c < 64 {
			m[c/32] |= 1 << (c % 32)
		}
	}
	return m
}

// setgroupsDenied reports whether this user namespace denies setgroups(2),
// as an unprivileged one must before its gid_map is written
// (user_namespaces(7), "/proc/[pid]/setgroups"): the process then keeps
// the groups it has, which the map holds as the namespace's root group.
func setgroupsDenied() bool {
	b, err := os.ReadFile("/proc/self/setgroups")
	return err == nil && strings.TrimSpace(string(b)) == "deny"
}
