package cgroup2

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// Sweep removes the children that an earlier run left behind: those named
// hpt<PID>- whose process PID no longer exists, killing what still runs in
// them first. It returns the names it removed.
func Sweep() ([]string, error) {
	root, names, err := listRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var removed []string
	var errs []error
	for _, name := range names {
		pid, ok := netns.Creator(name)
		if !ok || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); err == nil || errors.Is(err, unix.EPERM) {
			continue // its creator still runs
		}
		if err := remove(root, name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

// Ours returns the children named by any run of this package (hpt<PID>-),
// live or not: after a test's teardown there must be none of this
// process's.
func Ours() ([]string, error) {
	root, names, err := listRoot()
	if err != nil {
		return nil, err
	}
	root.Close()
	var ours []string
	for _, n := range names {
		if _, ok := netns.Creator(n); ok {
			ours = append(ours, n)
		}
	}
	return ours, nil
}

// listRoot opens the hierarchy's root and lists the cgroups under it.
func listRoot() (*os.File, []string, error) {
	root, err := openRoot()
	if err != nil {
		return nil, nil, err
	}
	names, err := children(root)
	if err != nil {
		root.Close()
		return nil, nil, err
	}
	return root, names, nil
}

// children lists the cgroups directly under root.
func children(root *os.File) ([]string, error) {
	fd, err := unix.Openat(int(root.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cgroup2: %w", err)
	}
	d := os.NewFile(uintptr(fd), "cgroup2")
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("cgroup2: list the hierarchy: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}
