package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// memLimitShare is the part of the container's memory limit that the Go heap
// may target; the rest is for the binary's pages, stacks and the kernel's
// socket buffers.
const memLimitShare = 0.9

// cgroupMemoryFiles hold the container's memory limit: cgroup v2's
// memory.max, else cgroup v1's memory.limit_in_bytes.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// setMemoryLimit gives the Go runtime a soft memory limit below the
// container's (kubeadm's CoreDNS has limits.memory 170Mi), so that the first
// list of 100,000 Ingresses makes the collector work harder instead of the
// kernel's OOM killer end the process: the Go runtime does not read the
// cgroup's memory limit by itself. GOMEMLIMIT, when set, is left to the
// runtime. It returns what it set, 0 for nothing.
func setMemoryLimit(getenv func(string) string, read func(string) ([]byte, error)) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return 0
	}
	for _, f := range cgroupMemoryFiles {
		b, err := read(f)
		if err != nil {
			continue
		}
		limit, ok := parseCgroupLimit(string(b))
		if !ok {
			return 0
		}
		soft := int64(float64(limit) * memLimitShare)
		debug.SetMemoryLimit(soft)
		return soft
	}
	return 0
}

// parseCgroupLimit reads a cgroup memory limit: bytes, or "max" (none). v1
// writes "no limit" as a huge multiple of the page size, which is no limit
// either.
func parseCgroupLimit(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || s == "max" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v >= 1<<60 {
		return 0, false
	}
	return v, true
}

// logMemoryLimit says once at startup what setMemoryLimit chose.
func logMemoryLimit(soft int64) {
	if soft > 0 {
		fmt.Fprintf(os.Stderr, "[INFO] coredns-hairpin: GOMEMLIMIT=%dMiB, %.0f%% of the container's memory limit\n", soft>>20, memLimitShare*100)
	}
}
