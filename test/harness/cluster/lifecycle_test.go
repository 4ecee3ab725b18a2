package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// TestClusterTearsDownWhatItStarted: New that fails half-way (its context
// ends before the node agent registers, after the control plane, the
// controllers, kube-proxy and the public DNS are up) tears down what it
// started before it returns, and Close tears down a cluster that started;
// either way no namespace, no child process and no root rule is left.
func TestClusterTearsDownWhatItStarted(t *testing.T) {
	harness.RequireRoot(t, "cluster: network namespaces")
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	tests := map[string]func(t *testing.T, opts Options) error{
		"AfterAFailedNew": func(t *testing.T, opts Options) error {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			c, err := New(ctx, opts)
			if errors.Is(err, harness.ErrSkipped) {
				t.Skip(err)
			}
			if err == nil {
				_ = c.Close()
				return fmt.Errorf("New with an ended context started a cluster")
			}
			t.Logf("New failed as it must: %v", err)
			return nil
		},
		"AtClose": func(t *testing.T, opts Options) error {
			c, err := New(t.Context(), opts)
			if errors.Is(err, harness.ErrSkipped) {
				t.Skip(err)
			}
			if err != nil {
				return err
			}
			return c.Close()
		},
	}
	for _, name := range []string{"AfterAFailedNew", "AtClose"} {
		t.Run(name, func(t *testing.T) {
			before := rootRules(t)
			if err := tests[name](t, Options{Dataplane: KubeProxy("nftables"), Name: "lifecycle", Output: t.Output()}); err != nil {
				t.Fatal(err)
			}
			if left := netns.Ours(); len(left) > 0 {
				t.Errorf("namespaces left behind: %v", left)
			}
			if left := children(t); len(left) > 0 {
				t.Errorf("child processes left behind: %v", left)
			}
			if after := rootRules(t); after != before {
				t.Errorf("the root namespace's rules changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// children are the test process's child processes, as "pid comm".
func children(t *testing.T) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var out []string
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		if f := strings.Fields(s[end+1:]); len(f) > 1 && f[1] == self {
			out = append(out, s[:end+1])
		}
	}
	return out
}
