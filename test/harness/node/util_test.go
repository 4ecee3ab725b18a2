package node_test

import (
	"net/netip"
	"os/exec"
	"strconv"
	"testing"
)

func itoa(i int) string { return strconv.Itoa(i) }

func command(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatalf("address %q: %v", s, err)
	}
	return a
}
