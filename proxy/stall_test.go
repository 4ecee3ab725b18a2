package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// TestStalledReaderPinsABoundedAmount: a client that never reads while the
// upstream streams 1 GiB. What the connection pins must stay under the
// documented bound (proxy/README.md, "A stalled reader") for the whole idle
// timeout, and the idle timeout must then close it.
//
// The bound, per connection: the proxy's client socket's send buffer
// (tcp_wmem[2] at most), its upstream socket's receive buffer (tcp_rmem[2]),
// the splice pipe and one user-space buffer. /proc/net/sockstat counts the
// test's two endpoint sockets as well, whose buffers are capped the same way,
// and every other TCP socket of the machine, hence the slack.
func TestStalledReaderPinsABoundedAmount(t *testing.T) {
	rmem, wmem := tcpBufMax(t, "tcp_rmem"), tcpBufMax(t, "tcp_wmem")
	if testing.Short() {
		t.Skip("a 10 s stall skipped in -short mode")
	}
	const idle = 10 * time.Second
	proxyBound := wmem + rmem + pipeSize + smallBuf
	sockstatBound := 2*(rmem+wmem) + 16<<20
	const rssBound = 32 << 20
	up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
		_ = newPattern(7).writeTo(uc.Conn, 1<<30, nil)
	})
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) {
		c.IdleTimeout = idle
		c.ReadyInterval = time.Hour
	}))
	mem0, rss0 := tcpMem(t), rss(t)
	start := time.Now()
	c := dialProxy(t, s, "r")
	var maxMem, maxRSS int64
	for metricValue(t, s, "hairpin_proxy_connections_closed_total", map[string]string{"route": "r", "reason": closedIdle}) == 0 {
		if time.Since(start) > idle+10*time.Second {
			t.Fatalf("still open %s after the stall began; the idle timeout is %s", time.Since(start).Round(time.Second), idle)
		}
		maxMem, maxRSS = max(maxMem, tcpMem(t)-mem0), max(maxRSS, rss(t)-rss0)
		if maxMem > sockstatBound || maxRSS > rssBound {
			t.Fatalf("after %s: TCP memory +%d MiB (bound %d MiB), RSS +%d MiB (bound %d MiB)",
				time.Since(start).Round(time.Millisecond), maxMem>>20, sockstatBound>>20, maxRSS>>20, rssBound>>20)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if d := time.Since(start); d < idle {
		t.Fatalf("closed after %s, before the %s idle timeout", d, idle)
	}
	// What the relay passed on toward a client that read nothing can only
	// sit in the proxy's client socket and in the client's own: anything
	// beyond their buffers would be queued somewhere the two counters
	// above do not see.
	sent := int64(metricValue(t, s, "hairpin_proxy_bytes_total", map[string]string{"route": "r", "direction": dirToClient}))
	if sent > rmem+wmem {
		t.Errorf("%d MiB relayed toward a client that reads nothing; its socket buffers hold at most %d MiB", sent>>20, (rmem+wmem)>>20)
	}
	t.Logf("stalled %s: TCP memory at most +%.1f MiB (bound %d MiB; the proxy's share at most %d MiB), RSS at most +%.1f MiB",
		time.Since(start).Round(time.Millisecond), float64(maxMem)/(1<<20), sockstatBound>>20, proxyBound>>20, float64(maxRSS)/(1<<20))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("client connection still open after the idle close")
	}
}

// tcpBufMax is the third field of net.ipv4.tcp_rmem or tcp_wmem: the most a
// socket's buffer grows to.
func tcpBufMax(t *testing.T, name string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/" + name)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 3 {
		t.Fatalf("%s: %q", name, b)
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// tcpMem is the machine's TCP memory in bytes: the "mem" pages of the TCP
// line of /proc/net/sockstat.
func tcpMem(t *testing.T) int64 {
	t.Helper()
	return procField(t, "/proc/net/sockstat", "TCP:", "mem") * int64(os.Getpagesize())
}

// rss is this process's resident set in bytes.
func rss(t *testing.T) int64 {
	t.Helper()
	return procField(t, "/proc/self/status", "VmRSS:", "") << 10
}

// procField reads the number after key (or, with key empty, the first one)
// on the line of path that starts with prefix.
func procField(t *testing.T, path, prefix, key string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 || fs[0] != prefix {
			continue
		}
		for i := 1; i < len(fs); i++ {
			if key == "" || (fs[i-1] == key) {
				if n, err := strconv.ParseInt(fs[i], 10, 64); err == nil {
					return n
				}
			}
		}
	}
	t.Fatal(fmt.Errorf("%s: no %s %s", path, prefix, key))
	return 0
}
