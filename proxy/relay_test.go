package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"io"
	"math/rand/v2"
	"net"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// pattern is a deterministic stream: 64 KiB blocks, each stamped
// with its index (so a dropped, duplicated or reordered block changes the
// hash) over a fixed pseudo-random body.
type pattern struct {
	body []byte
}

const patternBlock = 64 << 10

func newPattern(seed uint64) *pattern {
	rng := rand.New(rand.NewChaCha8([32]byte{byte(seed)}))
	b := make([]byte, patternBlock)
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	return &pattern{body: b}
}

// writeTo writes total bytes to w, hashing them into h if h is not nil.
func (p *pattern) writeTo(w io.Writer, total int64, h hash.Hash) error {
	buf := make([]byte, patternBlock)
	copy(buf, p.body)
	for i := int64(0); total > 0; i++ {
		binary.LittleEndian.PutUint64(buf, uint64(i))
		n := min(total, int64(len(buf)))
		if h != nil {
			h.Write(buf[:n])
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		total -= n
	}
	return nil
}

// bytes is the first total bytes of the stream.
func (p *pattern) bytes(total int64) []byte {
	var b bytes.Buffer
	_ = p.writeTo(&b, total, nil)
	return b.Bytes()
}

func (p *pattern) sum(total int64) []byte {
	h := sha256.New()
	_ = p.writeTo(io.Discard, total, h)
	return h.Sum(nil)
}

// TestLargeTransferBothWaysIsByteExact sends 1 GiB each way at the same time
// and compares SHA-256 digests at the receivers.
func TestLargeTransferBothWaysIsByteExact(t *testing.T) {
	if testing.Short() {
		t.Skip("1 GiB transfer skipped in -short mode")
	}
	const total = 1 << 30
	up2down, down2up := newPattern(1), newPattern(2)
	type result struct {
		sum []byte
		n   int64
		err error
	}
	fromClient := make(chan result, 1)
	up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
		var wg sync.WaitGroup
		wg.Go(func() {
			h := sha256.New()
			n, err := io.Copy(h, uc.Reader)
			fromClient <- result{h.Sum(nil), n, err}
		})
		if err := up2down.writeTo(uc.Conn, total, nil); err == nil {
			_ = uc.Conn.CloseWrite()
		}
		wg.Wait()
	})
	s := startProxy(t, testConfig(up.Addr()))
	c := dialProxy(t, s, "r")

	start := time.Now()
	writeErr := make(chan error, 1)
	go func() {
		err := down2up.writeTo(c, total, nil)
		if err == nil {
			err = c.CloseWrite()
		}
		writeErr <- err
	}()
	h := sha256.New()
	n, err := io.Copy(h, c)
	if err != nil || n != total {
		t.Fatalf("client received %d bytes, err %v; want %d", n, err, int64(total))
	}
	if err := <-writeErr; err != nil {
		t.Fatalf("client write: %v", err)
	}
	got := <-fromClient
	if got.err != nil || got.n != total {
		t.Fatalf("upstream received %d bytes, err %v; want %d", got.n, got.err, int64(total))
	}
	elapsed := time.Since(start)
	if !bytes.Equal(h.Sum(nil), up2down.sum(total)) {
		t.Error("upstream_to_client stream corrupted: SHA-256 mismatch")
	}
	if !bytes.Equal(got.sum, down2up.sum(total)) {
		t.Error("client_to_upstream stream corrupted: SHA-256 mismatch")
	}
	t.Logf("2 GiB relayed in %s (%.0f MB/s per direction)", elapsed, float64(total)/elapsed.Seconds()/1e6)
	harness.Eventually(t, 5*time.Second, "byte counters", func() bool {
		return metricValue(t, s, "hairpin_proxy_bytes_total", map[string]string{"route": "r", "direction": dirToUp}) == total &&
			metricValue(t, s, "hairpin_proxy_bytes_total", map[string]string{"route": "r", "direction": dirToClient}) == total
	})
}

// TestHalfCloseReachesUpstreamAndResponseStillArrives: the client's
// CloseWrite must reach the upstream as EOF, and what the upstream sends
// afterwards must still be delivered.
func TestHalfCloseReachesUpstreamAndResponseStillArrives(t *testing.T) {
	up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
		req, err := io.ReadAll(uc.Reader) // returns only on EOF
		if err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
		_, _ = uc.Conn.Write(append([]byte("got "), req...))
		_ = uc.Conn.CloseWrite()
	})
	s := startProxy(t, testConfig(up.Addr()))
	c := dialProxy(t, s, "r")
	if _, err := c.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	if string(resp) != "got request" {
		t.Fatalf("response %q, want %q", resp, "got request")
	}
	harness.Eventually(t, 2*time.Second, "closed{eof}", func() bool {
		return metricValue(t, s, "hairpin_proxy_connections_closed_total", map[string]string{"route": "r", "reason": closedEOF}) == 1
	})
}

func TestIdleTimeoutClosesSilentConnection(t *testing.T) {
	up := harness.StartUpstream(t, "127.0.0.1", harness.Echo)
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.IdleTimeout = 300 * time.Millisecond }))
	c := dialProxy(t, s, "r")
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	expectClosed(t, c, 3*time.Second)
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("closed after %s, before the 300ms idle timeout", d)
	}
	harness.Eventually(t, 2*time.Second, "closed{idle}", func() bool {
		return metricValue(t, s, "hairpin_proxy_connections_closed_total", map[string]string{"route": "r", "reason": closedIdle}) == 1
	})
}

// TestIdleTimeoutSparesOneWayTraffic: idle means no bytes in either
// direction, so a client that only sends must not be cut off.
func TestIdleTimeoutSparesOneWayTraffic(t *testing.T) {
	received := make(chan int64, 1)
	up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
		n, _ := io.Copy(io.Discard, uc.Reader)
		received <- n
	})
	// Generous margins: the machine is shared, and a scheduling stall longer
	// than the idle timeout minus the write gap would be real idleness.
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.IdleTimeout = time.Second }))
	c := dialProxy(t, s, "r")
	for range 25 { // 2.5 s, well past the idle timeout
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatalf("write: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = c.CloseWrite()
	select {
	case n := <-received:
		if n != 25 {
			t.Fatalf("upstream got %d bytes, want 25", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("upstream never saw EOF")
	}
	if v := metricValue(t, s, "hairpin_proxy_connections_closed_total", map[string]string{"route": "r", "reason": closedIdle}); v != 0 {
		t.Fatalf("closed{idle} = %v, want 0", v)
	}
}

// TestIdleTimeoutWhenPeerStopsReading covers the direction that is blocked
// writing (no read deadline can fire there): the upstream floods, the client
// never reads, so after the buffers fill nothing moves and the idle timeout
// must still close the connection.
func TestIdleTimeoutWhenPeerStopsReading(t *testing.T) {
	up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
		_ = newPattern(3).writeTo(uc.Conn, 1<<30, nil)
	})
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.IdleTimeout = 300 * time.Millisecond }))
	c := dialProxy(t, s, "r")
	_ = c.CloseWrite() // client->upstream ends at once; only the stuck direction is left
	harness.Eventually(t, 10*time.Second, "closed{idle}", func() bool {
		return metricValue(t, s, "hairpin_proxy_connections_closed_total", map[string]string{"route": "r", "reason": closedIdle}) == 1
	})
	// Draining the client now must end in EOF or reset, not hang.
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("client connection still open after idle close")
	}
}

// TestSplicedPipesCloseWithTheirConnection: a streaming direction splices
// through a pipe of its own, closed when the direction ends. Go's splice
// pool would keep such pipes (2 fds each) until a later garbage collection,
// beyond the per-connection fd budget.
func TestSplicedPipesCloseWithTheirConnection(t *testing.T) {
	up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
		_ = newPattern(5).writeTo(uc.Conn, 8<<20, nil) // streams: the direction splices
	})
	s := startProxy(t, testConfig(up.Addr()))
	// No garbage collection during the test: the pipes must go with their
	// connections, not with a later GC.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	base := harness.OpenFDs(t)
	const conns = 8
	var wg sync.WaitGroup
	for range conns {
		c := dialProxy(t, s, "r")
		wg.Go(func() {
			_ = c.CloseWrite()
			n, _ := io.Copy(io.Discard, c)
			if n != 8<<20 {
				t.Errorf("read %d bytes, want %d", n, 8<<20)
			}
			_ = c.Close()
		})
	}
	wg.Wait()
	harness.Eventually(t, 5*time.Second, "connections closed", func() bool {
		return metricValue(t, s, "hairpin_proxy_connections_closed_total", map[string]string{"route": "r", "reason": closedEOF}) == conns
	})
	harness.Eventually(t, 5*time.Second, "fds back to the baseline", func() bool { return harness.OpenFDs(t) <= base })
}

// TestLastBytesAndEOFReachTheClientInOneSegment: an upstream that sends its
// last bytes and its FIN in one segment (as HAProxy and nginx do before a
// close) reaches the client the same way through the proxy, not as the data
// and then a FIN of its own. The client's TCP_INFO counts the segments it
// received; a direct connection to an upstream of the same kind is the
// baseline (its SYN-ACK, then data and FIN together).
func TestLastBytesAndEOFReachTheClientInOneSegment(t *testing.T) {
	direct := harness.ServeTCP(t, func(c *net.TCPConn) { sayLastAndClose(t, c) })
	up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) { sayLastAndClose(t, uc.Conn) })
	s := startProxy(t, testConfig(up.Addr()))

	segsIn := func(addr string) (string, uint32) {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("read from %s: %v", addr, err)
		}
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var info *unix.TCPInfo
		if cerr := rc.Control(func(fd uintptr) { info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); cerr != nil || err != nil {
			t.Fatalf("TCP_INFO: %v %v", cerr, err)
		}
		return string(got), info.Segs_in
	}
	wantBody, wantSegs := segsIn(direct)
	for range 3 {
		body, segs := segsIn(s.Addr("r").String())
		if body != wantBody || segs != wantSegs {
			t.Fatalf("through the proxy: %q in %d segments, directly: %q in %d", body, segs, wantBody, wantSegs)
		}
	}
}

// sayLastAndClose sends a short answer with MSG_MORE and half-closes: the
// kernel puts the FIN on the answer's segment.
func sayLastAndClose(t *testing.T, c *net.TCPConn) {
	rc, err := c.SyscallConn()
	if err != nil {
		t.Error(err)
		return
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		_, serr = unix.SendmsgN(int(fd), []byte("last words"), nil, nil, unix.MSG_MORE)
		return !errors.Is(serr, unix.EAGAIN)
	}); err != nil || serr != nil {
		t.Errorf("send: %v %v", err, serr)
	}
	_ = c.CloseWrite()
	_, _ = io.Copy(io.Discard, c)
}
