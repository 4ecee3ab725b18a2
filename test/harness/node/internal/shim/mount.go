package shim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// buildRoot mounts the container's root and everything inside it. The
// shim runs in a mount namespace of its own, made private first, so none of
// this is seen outside, and all of it goes when the namespace does.
func buildRoot(s *Spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	opts := "lowerdir=" + s.Lower + ",upperdir=" + s.Upper + ",workdir=" + s.Work
	if err := unix.Mount("overlay", s.Root, "overlay", 0, opts); err != nil {
		return fmt.Errorf("mount root overlay on %s: %w", s.Root, err)
	}
	for _, m := range s.Mounts {
		if err := mountOne(s.Root, m); err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.Type, m.Target, err)
		}
	}
	if s.ReadOnlyRoot {
		if err := unix.Mount("", s.Root, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("make root read-only: %w", err)
		}
	}
	return nil
}

func mountOne(root string, m Mount) error {
	target, err := InRoot(root, m.Target)
	if err != nil {
		return err
	}
	if m.Type == "symlink" {
		_ = os.MkdirAll(filepath.Dir(target), 0o755)
		return os.Symlink(m.Source, target)
	}
	isFile := false
	if m.Type == "bind" {
		fi, err := os.Stat(m.Source)
		if err != nil {
			return err
		}
		isFile = !fi.IsDir()
	}
	if err := ensure(target, isFile); err != nil {
		return err
	}
	var flags uintptr
	if m.NoSuidDevExec {
		flags |= unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	}
	if m.Type == "bind" {
		if err := unix.Mount(m.Source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		if m.ReadOnly {
			return unix.Mount("", target, "", flags|unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, "")
		}
		return nil
	}
	if m.ReadOnly {
		flags |= unix.MS_RDONLY
	}
	return unix.Mount(m.Source, target, m.Type, flags, m.Data)
}

// ensure creates target as an empty file or directory unless it exists.
func ensure(target string, isFile bool) error {
	if _, err := os.Lstat(target); err == nil {
		return nil
	}
	if !isFile {
		return os.MkdirAll(target, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// InRoot resolves path as the container would see it below root: symbolic
// links are followed relative to root, and ".." never climbs above it, so
// an image's links (such as /var/run -> /run) cannot point a mount outside.
func InRoot(root, path string) (string, error) {
	const maxLinks = 40
	var resolved string // inside root, clean, no links
	rest := strings.Split(strings.TrimPrefix(filepath.Clean("/"+path), "/"), "/")
	for links := 0; len(rest) > 0; {
		part := rest[0]
		rest = rest[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir("/" + resolved)[1:]
			continue
		}
		next := filepath.Join(resolved, part)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return "", err
			}
			resolved = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many symbolic links", path)
		}
		link, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(link) {
			resolved = ""
		}
		rest = append(strings.Split(link, "/"), rest...)
	}
	return filepath.Join(root, resolved), nil
}
