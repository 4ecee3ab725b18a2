package harness

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"testing"
)

// ServiceCIDR is the Service cluster IP range the control plane runs with.
// It is loopback, so a Service's ClusterIP is an address a test can listen on.
var ServiceCIDR = netip.MustParsePrefix("127.77.0.0/16")

// handedOut remembers every address and port given out in this test binary,
// so that two helpers never return the same one before either is bound.
var handedOut = struct {
	sync.Mutex
	ports map[string]bool // "ip:port"
	ips   map[netip.Addr]bool
}{ports: map[string]bool{}, ips: map[netip.Addr]bool{}}

// FreePort returns a TCP port on host (an IP address, e.g. "127.0.0.1") that
// is free for both TCP and UDP at the time of the call and that this test
// binary has not handed out before. It fails the test when none is found.
func FreePort(t testing.TB, host string) int {
	t.Helper()
	port, err := freePort(host)
	if err != nil {
		t.Fatalf("harness: free port on %s: %v", host, err)
	}
	return port
}

// FreeAddr returns "host:port" with a port from [FreePort].
func FreeAddr(t testing.TB, host string) string {
	t.Helper()
	return net.JoinHostPort(host, strconv.Itoa(FreePort(t, host)))
}

// FreeLoopbackIP returns a random address in 127.0.0.0/8 that this test binary
// has not handed out before and that can be bound. It avoids 127.0.0.0/16,
// 127.0.1.0/24 (resolvers and /etc/hosts often live there), 127.255.0.0/16
// and [ServiceCIDR]. Linux routes the whole of 127.0.0.0/8 to lo, so no
// interface setup is needed.
func FreeLoopbackIP(t testing.TB) netip.Addr {
	t.Helper()
	for range 100 {
		a := netip.AddrFrom4([4]byte{127, byte(1 + rand.IntN(254)), byte(rand.IntN(256)), byte(1 + rand.IntN(254))})
		if a.As4()[1] == 255 || ServiceCIDR.Contains(a) {
			continue
		}
		handedOut.Lock()
		used := handedOut.ips[a]
		handedOut.ips[a] = true
		handedOut.Unlock()
		if used {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(a.String(), "0"))
		if err != nil {
			continue
		}
		l.Close()
		return a
	}
	t.Fatalf("harness: no bindable address in 127.0.0.0/8")
	return netip.Addr{}
}

// CanListen reports whether a TCP listener can be opened on ip:port now, for
// tests that prefer a well-known port (80, 443) where they can bind it and
// fall back to [FreePort] where they cannot.
func CanListen(ip netip.Addr, port int) bool {
	l, err := net.Listen("tcp", netip.AddrPortFrom(ip, uint16(port)).String())
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// PortOf returns the port of hostport ("ip:port"), failing t when it has
// none.
func PortOf(t testing.TB, hostport string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err == nil {
		var n int
		if n, err = strconv.Atoi(p); err == nil {
			return n
		}
	}
	t.Fatalf("harness: port of %q: %v", hostport, err)
	return 0
}

func freePort(host string) (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, fmt.Errorf("listen: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		// DNS servers listen on UDP and TCP alike: check UDP too.
		u, err := net.ListenPacket("udp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		u.Close()
		key := net.JoinHostPort(host, strconv.Itoa(port))
		handedOut.Lock()
		used := handedOut.ports[key]
		handedOut.ports[key] = true
		handedOut.Unlock()
		if !used {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port after 50 attempts")
}
