package sockmap

import (
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

var (
	sharedOnce  sync.Once
	sharedRelay *Relay
	sharedErr   error
)

// openRelay returns the package's relay, or skips the test with the reason
// the kernel path cannot run here.
func openRelay(t testing.TB) *Relay {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("in-kernel relay needs root (CAP_BPF and CAP_NET_ADMIN); not root")
	}
	sharedOnce.Do(func() { sharedRelay, sharedErr = Open(Options{MaxPairs: 4096}) })
	if errors.Is(sharedErr, ErrUnsupported) {
		t.Skipf("kernel lacks sockhash/SK_SKB support: %v", sharedErr)
	}
	if sharedErr != nil {
		t.Fatalf("Open: %v", sharedErr)
	}
	return sharedRelay
}

// conns is one relayed connection as the test sees it: the client's end,
// the upstream's accepted end, and the proxy's two sockets in between.
type conns struct {
	client, server       *net.TCPConn // the test's ends
	proxyClient, proxyUp *net.TCPConn // handed to Splice
}

// connect builds client -> proxy and proxy -> upstream on loopback and
// writes hdr from the proxy to the upstream, as the proxy does before it
// splices. Nothing is spliced yet.
func connect(t testing.TB, hdr []byte) *conns {
	t.Helper()
	var c conns
	c.client, c.proxyClient = tcpPair(t)
	c.proxyUp, c.server = tcpPair(t)
	if len(hdr) > 0 {
		if _, err := c.proxyUp.Write(hdr); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, x := range []*net.TCPConn{c.client, c.server, c.proxyClient, c.proxyUp} {
			_ = x.Close()
		}
	})
	return &c
}

// tcpPair returns the dialling and the accepted end of one loopback TCP
// connection.
func tcpPair(t testing.TB) (dialer, accepted *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ln.AcceptTCP()
	if err != nil {
		_ = d.Close()
		t.Fatal(err)
	}
	return d, a
}

// splice hands the proxy's sockets to r and fails the test on error.
func (c *conns) splice(t testing.TB, r *Relay, idle time.Duration) *Pair {
	t.Helper()
	p, err := r.Splice(c.proxyClient, c.proxyUp, idle)
	if err != nil {
		t.Fatalf("Splice: %v", err)
	}
	return p
}

// waitResult waits for p to end, failing the test after d.
func waitResult(t testing.TB, p *Pair, d time.Duration) Result {
	t.Helper()
	select {
	case <-p.Done():
		return p.Wait()
	case <-time.After(d):
		t.Fatalf("pair still open after %s", d)
		return Result{}
	}
}
