package main

import (
	"errors"
	"math"
	"runtime/debug"
	"testing"
)

func TestParseCgroupLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"178257920\n", 178257920, true},    // kubeadm's 170Mi
		{"max\n", 0, false},                 // cgroup v2 without a limit
		{"9223372036854771712\n", 0, false}, // cgroup v1 without a limit
		{"", 0, false},
		{"garbage", 0, false},
		{"-1", 0, false},
	} {
		got, ok := parseCgroupLimit(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseCgroupLimit(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMemoryLimitFollowsTheContainerUnlessGOMEMLIMITIsSet(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(p string) ([]byte, error) {
			if v, ok := m[p]; ok {
				return []byte(v), nil
			}
			return nil, errors.New("no such file")
		}
	}
	env := func(v string) func(string) string { return func(string) string { return v } }
	for _, tc := range []struct {
		name string
		env  string
		fs   map[string]string
		want int64
	}{
		{"cgroup v2 limit", "", map[string]string{"/sys/fs/cgroup/memory.max": "178257920\n"}, int64(178257920 * memLimitShare)},
		{"cgroup v1 limit", "", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "178257920\n"}, int64(178257920 * memLimitShare)},
		{"no limit", "", map[string]string{"/sys/fs/cgroup/memory.max": "max\n"}, 0},
		{"no cgroup files", "", nil, 0},
		{"GOMEMLIMIT wins", "100MiB", map[string]string{"/sys/fs/cgroup/memory.max": "178257920\n"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			got := setMemoryLimit(env(tc.env), files(tc.fs))
			if got != tc.want {
				t.Fatalf("setMemoryLimit = %d; want %d", got, tc.want)
			}
			if tc.want > 0 {
				if cur := debug.SetMemoryLimit(-1); cur != tc.want {
					t.Errorf("the runtime's limit is %d; want %d", cur, tc.want)
				}
			}
		})
	}
}
