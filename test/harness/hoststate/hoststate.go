// Package hoststate snapshots what of the machine a test cluster must leave
// as it found it: the sysctls under kernel. and net. as the root network
// namespace sees them, the root namespace's iptables and nftables rule
// sets, the BPF programs attached to the cgroup2 root and to the root
// namespace's devices, every BPF link, and the bpffs mounts of this mount
// namespace. Take one [Snapshot] before and one after, and [Snapshot.Diff]
// them.
//
// Reading BPF state needs bpftool (Debian's bpftool package) and root.
package hoststate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Snapshot is the machine's state that tests must not change.
type Snapshot struct {
	// Sysctls maps each readable sysctl under kernel. and net. (dotted) to
	// its value, as this process, in the root network namespace, reads it.
	Sysctls map[string]string
	// Rules is iptables-save, ip6tables-save and `nft list ruleset` of the
	// root network namespace, without the tools' comment lines.
	Rules string
	// BPF is the BPF state.
	BPF *BPF
	// BPFMounts are the bpffs mount points of this mount namespace.
	BPFMounts []string
}

// volatile are sysctls whose values change on their own, whatever a test
// does: counters, random values, and the perf sample rate the kernel lowers
// itself.
var volatile = map[string]bool{
	"kernel.random.uuid":                true,
	"kernel.random.entropy_avail":       true,
	"kernel.ns_last_pid":                true,
	"kernel.pty.nr":                     true,
	"kernel.perf_event_max_sample_rate": true,
	"net.netfilter.nf_conntrack_count":  true,
}

// Take snapshots the machine now.
func Take() (*Snapshot, error) {
	s := &Snapshot{}
	var err error
	if s.Sysctls, err = sysctls(); err != nil {
		return nil, err
	}
	if s.Rules, err = rules(); err != nil {
		return nil, err
	}
	if s.BPF, err = TakeBPF(); err != nil {
		return nil, err
	}
	if s.BPFMounts, err = bpfMounts(); err != nil {
		return nil, err
	}
	return s, nil
}

// Diff lists how after differs from s, one line per difference; none when
// the machine is as it was.
func (s *Snapshot) Diff(after *Snapshot) []string {
	var d []string
	keys := map[string]bool{}
	for k := range s.Sysctls {
		keys[k] = true
	}
	for k := range after.Sysctls {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		b, inB := s.Sysctls[k]
		a, inA := after.Sysctls[k]
		switch {
		case !inB:
			d = append(d, fmt.Sprintf("sysctl %s appeared: %q", k, a))
		case !inA:
			d = append(d, fmt.Sprintf("sysctl %s went: was %q", k, b))
		case a != b:
			d = append(d, fmt.Sprintf("sysctl %s: %q, was %q", k, a, b))
		}
	}
	if s.Rules != after.Rules {
		d = append(d, fmt.Sprintf("the root namespace's rules changed:\nbefore:\n%s\nafter:\n%s", s.Rules, after.Rules))
	}
	d = append(d, s.BPF.Diff(after.BPF)...)
	if strings.Join(s.BPFMounts, "\n") != strings.Join(after.BPFMounts, "\n") {
		d = append(d, fmt.Sprintf("bpffs mounts: %v, were %v", after.BPFMounts, s.BPFMounts))
	}
	return d
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sysctls reads /proc/sys/kernel and /proc/sys/net.
func sysctls() (map[string]string, error) {
	out := map[string]string{}
	for _, top := range []string{"kernel", "net"} {
		root := filepath.Join("/proc/sys", top)
		err := filepath.WalkDir(root, func(path string, e os.DirEntry, err error) error {
			if err != nil {
				return nil // a folder that went (a device's), or unreadable
			}
			if e.IsDir() {
				return nil
			}
			key := strings.ReplaceAll(strings.TrimPrefix(path, "/proc/sys/"), "/", ".")
			if volatile[key] {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return nil // write-only (net.ipv4.route.flush) or not readable
			}
			out[key] = strings.TrimSpace(string(b))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("hoststate: %w", err)
		}
	}
	return out, nil
}

// rules is the root namespace's whole netfilter state, as iptables (both
// address families) and nft print it, without comment lines (a timestamp).
func rules() (string, error) {
	var all strings.Builder
	for _, cmd := range [][]string{{"iptables-save"}, {"ip6tables-save"}, {"nft", "list", "ruleset"}} {
		out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("hoststate: %v: %w: %s", cmd, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if !strings.HasPrefix(line, "#") {
				all.WriteString(line + "\n")
			}
		}
	}
	return all.String(), nil
}

// RootRules is the root network namespace's netfilter rule sets (see
// [Snapshot.Rules]).
func RootRules() (string, error) { return rules() }

// bpfMounts lists the bpffs mount points of this mount namespace.
func bpfMounts() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("hoststate: %w", err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		if f := strings.Fields(post); len(f) > 0 && f[0] == "bpf" {
			if pf := strings.Fields(pre); len(pf) > 4 {
				out = append(out, pf[4])
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// WaitSame takes snapshots until one is the same as before, or timeout
// has passed, and returns the last differences: the kernel frees a BPF
// program a moment after its last link or pin has gone.
func WaitSame(before *Snapshot, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		after, err := Take()
		var diff []string
		if err != nil {
			diff = []string{err.Error()}
		} else {
			diff = before.Diff(after)
		}
		if len(diff) == 0 || time.Now().After(deadline) {
			return diff
		}
		time.Sleep(500 * time.Millisecond)
	}
}
