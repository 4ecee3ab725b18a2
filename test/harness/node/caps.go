package node

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// capNames are the capabilities by number (linux/capability.h).
var capNames = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
	"IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
	"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
	"LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
	"WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
}

// defaultCaps are containerd's (and Docker's) default capabilities.
var defaultCaps = []string{
	"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
	"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE",
}

// containerCaps is the capability set of a container: everything when
// privileged, else the defaults with securityContext.capabilities' drop
// (ALL included) taken out and then add put in.
func containerCaps(sc *corev1.SecurityContext) ([]uint, error) {
	if sc != nil && sc.Privileged != nil && *sc.Privileged {
		all := make([]uint, len(capNames))
		for i := range all {
			all[i] = uint(i)
		}
		return all, nil
	}
	set := slices.Clone(defaultCaps)
	if sc != nil && sc.Capabilities != nil {
		for _, d := range sc.Capabilities.Drop {
			name := capName(d)
			if name == "ALL" {
				set = nil
				continue
			}
			set = slices.DeleteFunc(set, func(s string) bool { return s == name })
		}
		for _, a := range sc.Capabilities.Add {
			name := capName(a)
			if name == "ALL" {
				set = slices.Clone(capNames)
				continue
			}
			if !slices.Contains(set, name) {
				set = append(set, name)
			}
		}
	}
	var nums []uint
	for _, name := range set {
		i := slices.Index(capNames, name)
		if i < 0 {
			return nil, fmt.Errorf("unknown capability %q", name)
		}
		nums = append(nums, uint(i))
	}
	return nums, nil
}

// capName accepts "NET_ADMIN" and "CAP_NET_ADMIN", in any case.
func capName(c corev1.Capability) string {
	return strings.TrimPrefix(strings.ToUpper(string(c)), "CAP_")
}
