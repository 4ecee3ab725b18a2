package node

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness/userns"
)

// file is one file of a volume's payload.
type file struct {
	data []byte
	mode os.FileMode
	uid  int // owner, -1 to keep root
	gid  int // group, -1 to keep root
}

// dataDir is the link that names the current payload, as in kubelet.
const (
	dataDir    = "..data"
	newDataDir = "..data_tmp"
)

// writeAtomic makes dir hold exactly payload (relative paths to files) the
// way kubelet's AtomicWriter does, so that a reader sees either the old
// or the new payload whole: the files go into a fresh timestamped
// directory ..YYYY_MM_DD_hh_mm_ss.N, the ..data link is switched to it by
// rename(2), and each top-level name is a link into ..data. It returns
// false, writing nothing, when dir already holds payload.
func writeAtomic(dir string, payload map[string]file) (bool, error) {
	for p := range payload {
		if err := validPayloadPath(p); err != nil {
			return false, err
		}
	}
	old, _ := os.Readlink(filepath.Join(dir, dataDir))
	if old != "" && samePayload(filepath.Join(dir, old), payload) {
		return false, nil
	}
	ts, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, fmt.Errorf("atomic writer: %w", err)
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return false, fmt.Errorf("atomic writer: %w", err)
	}
	for p, f := range payload {
		if err := writePayloadFile(filepath.Join(ts, p), f); err != nil {
			os.RemoveAll(ts)
			return false, fmt.Errorf("atomic writer: %w", err)
		}
	}
	tmp := filepath.Join(dir, newDataDir)
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		os.RemoveAll(ts)
		return false, fmt.Errorf("atomic writer: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataDir)); err != nil {
		os.RemoveAll(ts)
		return false, fmt.Errorf("atomic writer: %w", err)
	}
	if err := updateUserLinks(dir, payload); err != nil {
		return true, err
	}
	if old != "" {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return true, fmt.Errorf("atomic writer: %w", err)
		}
	}
	return true, nil
}

func validPayloadPath(p string) error {
	switch {
	case p == "" || filepath.IsAbs(p):
		return fmt.Errorf("atomic writer: invalid path %q", p)
	case slices.Contains(strings.Split(p, "/"), ".."):
		return fmt.Errorf("atomic writer: path %q must not contain '..'", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("atomic writer: path %q must not start with '..'", p)
	}
	return nil
}

func writePayloadFile(path string, f file) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, f.data, f.mode); err != nil {
		return err
	}
	if err := os.Chmod(path, f.mode); err != nil { // past the umask
		return err
	}
	if f.uid >= 0 || f.gid >= 0 {
		uid, gid := userns.Owner(f.uid, f.gid)
		return os.Lchown(path, uid, gid)
	}
	return nil
}

// samePayload reports whether dir holds exactly payload, modes included.
func samePayload(dir string, payload map[string]file) bool {
	count := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		f, ok := payload[rel]
		if !ok {
			return fmt.Errorf("extra file %s", rel)
		}
		count++
		fi, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil || fi.Mode().Perm() != f.mode.Perm() || !bytes.Equal(data, f.data) {
			return fmt.Errorf("%s changed", rel)
		}
		return nil
	})
	return err == nil && count == len(payload)
}

// updateUserLinks links each top-level payload name into ..data and
// removes the links of names the payload no longer has.
func updateUserLinks(dir string, payload map[string]file) error {
	top := map[string]bool{}
	for p := range payload {
		first, _, _ := strings.Cut(p, "/")
		top[first] = true
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(dataDir, name), link); err != nil {
			return fmt.Errorf("atomic writer: %w", err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("atomic writer: %w", err)
	}
	for _, e := range entries {
		// Only links are the writer's: a folder is a mount point that a
		// container's runtime made for a volume mounted inside this one.
		if strings.HasPrefix(e.Name(), "..") || top[e.Name()] || e.Type()&os.ModeSymlink == 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("atomic writer: %w", err)
		}
	}
	return nil
}
