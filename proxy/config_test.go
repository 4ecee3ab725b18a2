package proxy

import (
	"strings"
	"syscall"
	"testing"
)

func TestNewRejectsInvalidConfig(t *testing.T) {
	c := DefaultConfig()
	c.Routes = []Route{{Listen: ":8080", Upstream: "a:80", HeaderPort: 70000}}
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "header-port 70000 out of range 1-65535") {
		t.Fatalf("New error = %v", err)
	}
	c.Routes = []Route{{Listen: ":8080", Upstream: "a:80"}}
	c.ProxyProtocol = 0
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "unknown version 0") {
		t.Fatalf("New error = %v", err)
	}
}

// TestDefaultMaxConnsFitsTheFDLimit: the default cap is what the fd limit
// allows at fdsPerConn descriptors per connection, not a fixed number.
func TestDefaultMaxConnsFitsTheFDLimit(t *testing.T) {
	for _, tc := range []struct {
		limit uint64
		want  int
	}{
		{1024, (1024 - 64) / 6},
		{65536, (65536 - 64) / 6},
		{1048576, (1048576 - 64) / 6},
		{70, 1},
		{10, 1},
	} {
		if got := maxConnsForLimit(tc.limit); got != tc.want {
			t.Errorf("maxConnsForLimit(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if got, want := DefaultConfig().MaxConns, maxConnsForLimit(lim.Cur); got != want {
		t.Fatalf("DefaultConfig().MaxConns = %d, want %d for RLIMIT_NOFILE %d", got, want, lim.Cur)
	}
	if got := DefaultConfig().MaxConns*fdsPerConn + fdReserve; uint64(got) > lim.Cur {
		t.Fatalf("default cap needs %d fds, limit is %d", got, lim.Cur)
	}
}
