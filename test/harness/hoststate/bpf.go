package hoststate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// BPF is the machine's BPF state that a dataplane may change.
type BPF struct {
	// Cgroup are the programs attached to the cgroup2 root, which every
	// process of the machine is under.
	Cgroup []Attachment
	// Devices is `bpftool net show` in the root network namespace.
	Devices string
	// Links are the machine's BPF links.
	Links []Link
	// Progs maps each loaded program's ID to its name.
	Progs map[int]string
}

// Attachment is one program attached to a cgroup.
type Attachment struct {
	ID         int    `json:"id"`
	AttachType string `json:"attach_type"`
	Name       string `json:"name"`
}

// Link is one BPF link.
type Link struct {
	ID     int      `json:"id"`
	Type   LinkType `json:"type"`
	ProgID int      `json:"prog_id"`
}

// LinkType is a link's type as bpftool prints it: a name, or the kernel's
// number for a type this bpftool has no name for (tcx links on Debian's).
type LinkType string

// UnmarshalJSON takes a name or a number.
func (t *LinkType) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		*t = LinkType(name)
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("hoststate: link type %s: %w", b, err)
	}
	*t = LinkType(strconv.Itoa(n))
	return nil
}

// TakeBPF snapshots the BPF state.
func TakeBPF() (*BPF, error) {
	b := &BPF{Progs: map[int]string{}}
	out, err := onCgroupRoot("-j", "cgroup", "show", "{}")
	if err != nil {
		return nil, err
	}
	if err := unmarshal(out, &b.Cgroup); err != nil {
		return nil, err
	}
	sort.Slice(b.Cgroup, func(i, j int) bool { return b.Cgroup[i].ID < b.Cgroup[j].ID })
	dev, err := bpftool("-j", "net", "show")
	if err != nil {
		return nil, err
	}
	b.Devices = strings.TrimSpace(string(dev))
	if out, err = bpftool("-j", "link", "show"); err != nil {
		return nil, err
	}
	if err := unmarshal(out, &b.Links); err != nil {
		return nil, err
	}
	sort.Slice(b.Links, func(i, j int) bool { return b.Links[i].ID < b.Links[j].ID })
	if out, err = bpftool("-j", "prog", "show"); err != nil {
		return nil, err
	}
	var progs []struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
	}
	if err := unmarshal(out, &progs); err != nil {
		return nil, err
	}
	for _, p := range progs {
		b.Progs[p.ID] = p.Name
	}
	return b, nil
}

// CgroupPrograms returns the programs attached to the cgroup at path (a
// node's child of the cgroup2 hierarchy), sorted by ID.
func CgroupPrograms(path string) ([]Attachment, error) {
	out, err := bpftool("-j", "cgroup", "show", path)
	if err != nil {
		return nil, err
	}
	var as []Attachment
	if err := unmarshal(out, &as); err != nil {
		return nil, err
	}
	sort.Slice(as, func(i, j int) bool { return as[i].ID < as[j].ID })
	return as, nil
}

// unmarshal reads bpftool's JSON; bpftool prints nothing, not [], for an
// empty list on some versions.
func unmarshal(out []byte, v any) error {
	if len(strings.TrimSpace(string(out))) == 0 {
		return nil
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("hoststate: bpftool: %w: %q", err, out)
	}
	return nil
}

// Diff lists what after has that b had not: programs attached to the cgroup
// root, device programs of the root namespace, links, programs still
// loaded.
func (b *BPF) Diff(after *BPF) []string {
	var d []string
	for _, a := range after.Cgroup {
		if !slices.Contains(b.Cgroup, a) {
			d = append(d, fmt.Sprintf("BPF program %s (id %d) attached to the cgroup2 root as %s", a.Name, a.ID, a.AttachType))
		}
	}
	if after.Devices != b.Devices {
		d = append(d, fmt.Sprintf("BPF programs on the root namespace's devices: %s, were %s", after.Devices, b.Devices))
	}
	for _, l := range after.Links {
		if !slices.ContainsFunc(b.Links, func(o Link) bool { return o.ID == l.ID }) {
			d = append(d, fmt.Sprintf("BPF link %d (%s) of program %d (%s)", l.ID, l.Type, l.ProgID, after.Progs[l.ProgID]))
		}
	}
	var ids []int
	for id := range after.Progs {
		if _, ok := b.Progs[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	for _, id := range ids {
		d = append(d, fmt.Sprintf("BPF program %d (%s) still loaded", id, after.Progs[id]))
	}
	return d
}

// DetachNew detaches what was attached to the cgroup2 root since b was
// taken: through its link when it has one, else directly. A dataplane
// agent that was killed leaves its cgroup programs on a root that is the
// whole machine's.
func (b *BPF) DetachNew() error {
	now, err := TakeBPF()
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range now.Cgroup {
		if slices.Contains(b.Cgroup, a) {
			continue
		}
		i := slices.IndexFunc(now.Links, func(l Link) bool { return l.ProgID == a.ID })
		if i >= 0 {
			_, err = bpftool("link", "detach", "id", fmt.Sprint(now.Links[i].ID))
		} else {
			_, err = onCgroupRoot("cgroup", "detach", "{}", a.AttachType, "id", fmt.Sprint(a.ID))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("detach %s (id %d): %w", a.Name, a.ID, err))
		}
	}
	return errors.Join(errs...)
}

func bpftool(args ...string) ([]byte, error) {
	return output(exec.Command("bpftool", args...), "bpftool "+strings.Join(args, " "))
}

// output runs cmd and returns its stdout; a failure names what and
// carries cmd's stderr.
func output(cmd *exec.Cmd, what string) ([]byte, error) {
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("hoststate: %s: %w", what, err)
	}
	return out, nil
}

// onCgroupRoot runs bpftool with args, "{}" standing for the cgroup2 root,
// mounted for it in a mount namespace of its own: the machine may have no
// cgroup2 mount (cgroup v1), and this way none is added to it.
func onCgroupRoot(args ...string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "cgroup2-")
	if err != nil {
		return nil, fmt.Errorf("hoststate: %w", err)
	}
	defer os.Remove(dir)
	for i, a := range args {
		if a == "{}" {
			args[i] = dir
		}
	}
	script := `mount -t cgroup2 cgroup2 "$0" && exec bpftool "$@"`
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "/bin/sh", "-c", script, dir}, args...)...)
	return output(cmd, "bpftool "+strings.Join(args, " ")+" on the cgroup2 root")
}
