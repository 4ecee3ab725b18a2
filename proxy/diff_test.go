package proxy

import (
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// copyRelay is the differential test's oracle and nothing else: the
// textbook relay, one goroutine and io.Copy per direction, behind the same
// PROXY header. A direction half-closes its destination at its source's
// EOF; an error either way closes both connections.
func copyRelay(t *testing.T, upstream string) string {
	return harness.ServeTCP(t, func(c *net.TCPConn) {
		nu, err := net.Dial("tcp", upstream)
		if err != nil {
			return
		}
		u := nu.(*net.TCPConn)
		defer u.Close()
		h, _ := buildHeader(1, c.RemoteAddr().(*net.TCPAddr).AddrPort(), c.LocalAddr().(*net.TCPAddr).AddrPort(), netip.Addr{}, 80)
		b, _ := h.Format()
		if _, err := u.Write(b); err != nil {
			return
		}
		var once sync.Once
		abort := func() { once.Do(func() { _ = c.Close(); _ = u.Close() }) }
		var wg sync.WaitGroup
		pipe := func(dst, src *net.TCPConn) {
			if _, err := io.Copy(dst, src); err != nil {
				abort()
			} else {
				_ = dst.CloseWrite()
			}
		}
		wg.Go(func() { pipe(u, c) })
		wg.Go(func() { pipe(c, u) })
		wg.Wait()
	})
}

// shape is one connection's traffic: what each side writes, in which
// chunks, and who waits for whom. Every side reads the other's whole
// stream; a reset comes only from a side that has, once its bytes are
// acknowledged, so what each side sees does not depend on timing.
type shape struct {
	client, upstream []int // chunk sizes
	pause            bool  // a millisecond between chunks
	order            string
	end              string // how the responder ends: "halfclose", "close" or "reset"
}

const (
	concurrent    = "concurrent"     // both write, half-close and read at once
	clientFirst   = "client first"   // the upstream answers after the client's EOF
	upstreamFirst = "upstream first" // the client answers after the upstream's EOF
)

func randomShape(rng *rand.Rand) shape {
	sizes := []int{1, 100, smallBuf - 1, smallBuf, smallBuf + 1, 64 << 10, 300 << 10}
	chunks := func() []int {
		c := make([]int, rng.IntN(5))
		for i := range c {
			if rng.IntN(3) == 0 {
				c[i] = 1 + rng.IntN(4000)
			} else {
				c[i] = sizes[rng.IntN(len(sizes))]
			}
		}
		return c
	}
	return shape{
		client: chunks(), upstream: chunks(), pause: rng.IntN(2) == 0,
		order: []string{concurrent, clientFirst, upstreamFirst}[rng.IntN(3)],
		end:   []string{"halfclose", "close", "reset"}[rng.IntN(3)],
	}
}

// seen is what one side observed: the digest and length of what it read,
// and how its stream ended.
type seen struct {
	sum [32]byte
	n   int
	how string
}

func (s seen) String() string { return fmt.Sprintf("%d bytes %x… then %s", s.n, s.sum[:4], s.how) }

// stream is the bytes a side of a shape writes, chunk by chunk.
func stream(seed uint64, chunks []int) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 3))
	out := make([][]byte, len(chunks))
	for i, n := range chunks {
		out[i] = make([]byte, n)
		for j := range out[i] {
			out[i][j] = byte(rng.Uint32())
		}
	}
	return out
}

// play runs one side of a shape on c (r reads it: the upstream's reader
// holds what came with the header). responder says this side waits for the
// other's EOF before it writes, and ends with end.
func play(c *net.TCPConn, r io.Reader, chunks [][]byte, pause, responder bool, end string) seen {
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	write := func() {
		for _, b := range chunks {
			if _, err := c.Write(b); err != nil {
				return
			}
			if pause {
				time.Sleep(time.Millisecond)
			}
		}
	}
	read := func() seen {
		b, err := io.ReadAll(r)
		return seen{sha256.Sum256(b), len(b), ending(err)}
	}
	if !responder {
		done := make(chan struct{})
		go func() { write(); _ = c.CloseWrite(); close(done) }()
		s := read()
		<-done
		return s
	}
	s := read()
	write()
	switch end {
	case "halfclose":
		_ = c.CloseWrite()
		_, _ = io.Copy(io.Discard, r) // the peer's EOF came already
	case "reset":
		waitOutqEmpty(c)
		_ = c.SetLinger(0)
	}
	_ = c.Close()
	return s
}

// TestRelayMatchesTheCopyOracle: random traffic shapes, each through our
// event loops and through the io.Copy relay, must leave both sides having
// read the same bytes and seen the same close.
func TestRelayMatchesTheCopyOracle(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 10
	}
	type job struct {
		sh   shape
		up   [][]byte
		seen chan seen
	}
	jobs := make(chan job, 1)
	up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
		j := <-jobs
		j.seen <- play(uc.Conn, uc.Reader, j.up, j.sh.pause, j.sh.order == clientFirst, j.sh.end)
	})
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.ReadyInterval = time.Hour }))
	relays := []struct{ name, addr string }{{"ours", s.Addr("r").String()}, {"io.Copy", copyRelay(t, up.Addr())}}
	rng := rand.New(rand.NewPCG(2026, 22))
	for i := range n {
		sh := randomShape(rng)
		cli, ups := stream(uint64(2*i), sh.client), stream(uint64(2*i+1), sh.upstream)
		var got [2][2]seen // by relay: client's, upstream's
		for k, rl := range relays {
			j := job{sh, ups, make(chan seen, 1)}
			jobs <- j
			nc, err := net.DialTimeout("tcp", rl.addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			got[k][0] = play(nc.(*net.TCPConn), nc, cli, sh.pause, sh.order == upstreamFirst, sh.end)
			select {
			case got[k][1] = <-j.seen:
			case <-time.After(30 * time.Second):
				t.Fatalf("shape %d %+v via %s: the upstream never finished", i, sh, rl.name)
			}
		}
		want := [2]seen{{sha256.Sum256(concat(ups)), len(concat(ups)), "eof"}, {sha256.Sum256(concat(cli)), len(concat(cli)), "eof"}}
		for side, name := range []string{"client", "upstream"} {
			if got[0][side] != got[1][side] {
				t.Errorf("shape %d %+v: the %s saw %s through ours, %s through io.Copy", i, sh, name, got[0][side], got[1][side])
			}
			if got[1][side] != want[side] {
				t.Errorf("shape %d %+v: the oracle's %s saw %s, want %s: the shape is not deterministic", i, sh, name, got[1][side], want[side])
			}
		}
	}
}

func concat(chunks [][]byte) []byte {
	var b []byte
	for _, c := range chunks {
		b = append(b, c...)
	}
	return b
}
