package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// TestConcurrentMixedTrafficIsByteExact: many connections at once through
// the event loops, each with its own size (around the 16 KiB buffer, where
// a direction turns to splice, and beyond), write pattern and reader (slow
// readers hold the proxy's writes back), echoed by the upstream. Every
// byte must come back in order, the counters must add up, and nothing may
// be left open.
func TestConcurrentMixedTrafficIsByteExact(t *testing.T) {
	sizes := []int{0, 1, 100, smallBuf - 1, smallBuf, smallBuf + 1, 200 << 10, 3 << 20}
	clients := 48
	if testing.Short() {
		clients = 16
	}
	// A plain copy loop: io.Copy would splice through the runtime's pipe
	// pool, whose pipes outlive their connections until a GC and would
	// read as a leak.
	up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
		_, _ = io.CopyBuffer(struct{ io.Writer }{uc.Conn}, struct{ io.Reader }{uc.Reader}, make([]byte, 32<<10))
		_ = uc.Conn.CloseWrite()
	})
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.ReadyInterval = time.Hour }))
	fds := harness.OpenFDs(t)
	var total int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		size := sizes[i%len(sizes)]
		total += int64(size)
		wg.Go(func() {
			if err := mixedClient(s, i, size, i%3 == 0); err != nil {
				errs <- fmt.Errorf("client %d (%d bytes): %w", i, size, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	harness.Eventually(t, 5*time.Second, "byte counters and connections", func() bool {
		return metricValue(t, s, "hairpin_proxy_bytes_total", map[string]string{"route": "r", "direction": dirToUp}) == float64(total) &&
			metricValue(t, s, "hairpin_proxy_bytes_total", map[string]string{"route": "r", "direction": dirToClient}) == float64(total) &&
			metricValue(t, s, "hairpin_proxy_connections_active", map[string]string{"route": "r"}) == 0
	})
	if got := metricValue(t, s, "hairpin_proxy_connections_closed_total", map[string]string{"route": "r", "reason": closedEOF}); got != float64(clients) {
		t.Errorf("closed with eof: %v, want %d", got, clients)
	}
	harness.Eventually(t, 5*time.Second, "fds back to the baseline", func() bool { return harness.OpenFDs(t) <= fds })
}

// mixedClient writes size bytes in random chunks, half-closes, and checks
// that the echo is the same stream; a slow client pauses while reading.
func mixedClient(s *Server, seed, size int, slow bool) error {
	nc, err := net.DialTimeout("tcp", s.Addr("r").String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	c := nc.(*net.TCPConn)
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	werr := make(chan error, 1)
	go func() {
		rest := data
		for len(rest) > 0 {
			n := min(len(rest), 1+rng.IntN(64<<10))
			if _, err := c.Write(rest[:n]); err != nil {
				werr <- err
				return
			}
			rest = rest[n:]
		}
		werr <- c.CloseWrite()
	}()
	h := sha256.New()
	buf := make([]byte, 8<<10)
	var n int
	for {
		k, err := c.Read(buf)
		h.Write(buf[:k])
		n += k
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read after %d bytes: %w", n, err)
		}
		if slow && n%(256<<10) < k {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if err := <-werr; err != nil {
		return fmt.Errorf("write: %w", err)
	}
	want := sha256.Sum256(data)
	if n != size || !bytes.Equal(h.Sum(nil), want[:]) {
		return fmt.Errorf("echo of %d bytes, digest match %v", n, bytes.Equal(h.Sum(nil), want[:]))
	}
	return nil
}

// TestConnectionsSpreadOverEveryLoop: a burst of connections is shared by
// the loops (SO_REUSEPORT), not taken by whichever loop woke first.
func TestConnectionsSpreadOverEveryLoop(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	up := harness.StartUpstream(t, "127.0.0.1", harness.Echo)
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.ReadyInterval = time.Hour }))
	if len(s.loops) != 4 {
		t.Fatalf("%d loops, want one per GOMAXPROCS (4)", len(s.loops))
	}
	// All at once, as a load generator opens its connections: queued
	// before any loop wakes.
	const n = 64
	addr := s.Addr("r").(*net.TCPAddr)
	for range n {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Close(fd) })
		sa := &syscall.SockaddrInet4{Port: addr.Port, Addr: addr.AddrPort().Addr().As4()}
		if err := syscall.Connect(fd, sa); err != nil && err != syscall.EINPROGRESS {
			t.Fatal(err)
		}
	}
	harness.Eventually(t, 5*time.Second, "every connection relayed", func() bool {
		return metricValue(t, s, "hairpin_proxy_connections_active", map[string]string{"route": "r"}) == n
	})
	for i, l := range s.loops {
		var conns int
		l.ev.Call(func() { conns = len(l.conns) })
		if conns == 0 {
			t.Errorf("loop %d holds no connection of %d", i, n)
		}
	}
}

// TestBytesQueuedBeforeAResetAreDelivered: a reset socket still holds what
// its peer sent before the RST, and those bytes must reach the other side:
// an upstream that answers and then resets (closing with the rest of the
// request unread, as a server refusing a large body does), and a client
// that sends and then resets (SO_LINGER 0). Each case runs 20 times: the
// reset and the data often arrive in one event.
func TestBytesQueuedBeforeAResetAreDelivered(t *testing.T) {
	payload := bytes.Repeat([]byte("p"), 3000)
	t.Run("response before the upstream resets", func(t *testing.T) {
		up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
			if _, err := io.ReadFull(uc.Reader, make([]byte, 1)); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond) // the rest of the request arrives, unread
			_, _ = uc.Conn.Write(payload)
			_ = uc.Conn.SetLinger(0)
			_ = uc.Conn.Close()
		})
		s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.ReadyInterval = time.Hour }))
		for i := range 20 {
			c := dialProxy(t, s, "r")
			if _, err := c.Write([]byte("a request of more than one byte")); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, _ := io.ReadAll(c)
			_ = c.Close()
			if !bytes.Equal(got, payload) {
				t.Errorf("run %d: client got %d of %d response bytes", i, len(got), len(payload))
			}
		}
	})
	t.Run("request before the client resets", func(t *testing.T) {
		got := make(chan []byte, 1)
		up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
			b, _ := io.ReadAll(uc.Reader)
			got <- b
		})
		s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.ReadyInterval = time.Hour }))
		for i := range 20 {
			c := dialProxy(t, s, "r")
			up.NextHeader(t) // relaying
			time.Sleep(5 * time.Millisecond)
			if _, err := c.Write(payload); err != nil {
				t.Fatal(err)
			}
			_ = c.SetLinger(0)
			_ = c.Close()
			select {
			case b := <-got:
				if !bytes.Equal(b, payload) {
					t.Errorf("run %d: upstream got %d of %d request bytes", i, len(b), len(payload))
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("run %d: upstream still open 5 s after the client reset", i)
			}
		}
	})
}

// TestUrgentByteDoesNotStrandTheRest: a read stops short at TCP's urgent
// mark with more bytes queued, so the short-read rule must not leave them
// waiting for an arrival that may never come. The urgent byte itself is
// out of band (no SO_OOBINLINE) and not relayed, as with HAProxy.
func TestUrgentByteDoesNotStrandTheRest(t *testing.T) {
	up := harness.StartUpstream(t, "127.0.0.1", harness.Echo)
	slow := withDialFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
		time.Sleep(100 * time.Millisecond) // everything is queued by the time the relay starts
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	})
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.ReadyInterval = time.Hour }), slow)
	c := dialProxy(t, s, "r")
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		serr = syscall.Sendto(int(fd), []byte("X"), syscall.MSG_OOB, nil)
		return true
	}); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	if _, err := c.Write([]byte("def")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	var got []byte
	buf := make([]byte, 64)
	for len(got) < 6 {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("echo so far %q: %v", got, err)
		}
	}
	if string(got) != "abcdef" {
		t.Fatalf("echo %q, want %q", got, "abcdef")
	}
}
