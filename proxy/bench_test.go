package proxy

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// benchTargets starts the same upstream twice over: reachable directly, and
// through a proxy route. Sub-benchmarks "direct" and "proxy" then do the
// same work against each, so their ratio is the proxy's cost.
func benchTargets(b *testing.B, handle func(c net.Conn)) map[string]string {
	b.Helper()
	addr := harness.ServeTCP(b, func(c *net.TCPConn) { handle(c) })
	s := startProxy(b, testConfig(addr, func(c *Config) { c.MaxConns = 0 }))
	return map[string]string{"direct": addr, "proxy": s.Addr("r").String()}
}

// BenchmarkThroughput streams 64 KiB writes one way over a single connection;
// the receiver discards them and acknowledges EOF with one byte.
func BenchmarkThroughput(b *testing.B) {
	targets := benchTargets(b, func(c net.Conn) {
		_, _ = io.Copy(io.Discard, c)
		_, _ = c.Write([]byte{1})
	})
	for _, name := range []string{"direct", "proxy"} {
		b.Run(name, func(b *testing.B) {
			buf := make([]byte, 64<<10)
			c, err := net.Dial("tcp", targets[name])
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			b.SetBytes(int64(len(buf)))
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
			_ = c.(*net.TCPConn).CloseWrite()
			if _, err := io.ReadFull(c, buf[:1]); err != nil {
				b.Fatalf("no end-of-stream acknowledgement: %v", err)
			}
		})
	}
}

// BenchmarkNewConnection measures one short exchange per iteration: connect,
// send a request line, read the response line, close.
func BenchmarkNewConnection(b *testing.B) {
	targets := benchTargets(b, func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(c)
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, "PROXY ") { // the v1 header; the direct path has none
			line, err = r.ReadString('\n')
		}
		if err == nil && line == "ping\n" {
			_, _ = c.Write([]byte("pong\n"))
		}
	})
	for _, name := range []string{"direct", "proxy"} {
		b.Run(name, func(b *testing.B) {
			buf := make([]byte, 5)
			for range b.N {
				c, err := net.Dial("tcp", targets[name])
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Write([]byte("ping\n")); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "pong\n" {
					b.Fatalf("response %q, %v", buf, err)
				}
				_ = c.Close()
			}
		})
	}
}
