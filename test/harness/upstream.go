package harness

import (
	"bufio"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	proxyproto "github.com/pires/go-proxyproto"
)

// UpstreamConn is one connection accepted by an [Upstream], after its PROXY
// header: the parsed header, a reader positioned just after it (it may hold
// payload already), and the raw connection, for writes and half-closes.
type UpstreamConn struct {
	Header *proxyproto.Header
	Reader *bufio.Reader
	Conn   *net.TCPConn
}

// Upstream is an in-process stand-in for a PROXY-protocol controller, for
// tests of the proxy that need no real nginx: it requires a PROXY header (v1
// or v2, parsed with go-proxyproto) on every connection, records it, and
// hands the connection to its handler. A readiness probe (a LOCAL or
// UNKNOWN header, or a connection that closes before a header is complete)
// never reaches the handler: its raw bytes go to [Upstream.Probes].
type Upstream struct {
	ln      net.Listener
	headers chan *proxyproto.Header
	probes  chan []byte
	wg      sync.WaitGroup
	once    sync.Once
}

// upstreamHeaders is how many headers an [Upstream] keeps for
// [Upstream.NextHeader]; later ones are dropped until the test reads.
const upstreamHeaders = 64

// headerTimeout bounds the wait for a PROXY header, so that a stuck client
// does not keep a handler (and the test's cleanup) waiting.
const headerTimeout = 10 * time.Second

// StartUpstream listens on a free port of host (for example "127.0.0.1" or
// "::1") and runs handle for each connection once its PROXY header is read.
// The listener is closed, and every handler waited for, in t.Cleanup.
func StartUpstream(t testing.TB, host string, handle func(UpstreamConn)) *Upstream {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("harness: upstream: %v", err)
	}
	u := &Upstream{ln: ln, headers: make(chan *proxyproto.Header, upstreamHeaders), probes: make(chan []byte, upstreamHeaders)}
	u.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.wg.Go(func() { u.serve(c.(*net.TCPConn), handle) })
		}
	})
	t.Cleanup(u.Close)
	return u
}

// StartEchoUpstream is [StartUpstream] with [Echo] as the handler.
func StartEchoUpstream(t testing.TB, host string) *Upstream {
	t.Helper()
	return StartUpstream(t, host, Echo)
}

func (u *Upstream) serve(c *net.TCPConn, handle func(UpstreamConn)) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 64<<10)
	_ = c.SetReadDeadline(time.Now().Add(headerTimeout))
	// Peek first: the parser consumes what it reads, and a probe's bytes
	// are what a test of the probe checks.
	raw, _ := r.Peek(16)
	raw = append([]byte(nil), raw...)
	hdr, err := proxyproto.Read(r)
	if err != nil || hdr.Command.IsLocal() || hdr.TransportProtocol == proxyproto.UNSPEC {
		rest, _ := io.ReadAll(r)
		select {
		case u.probes <- append(raw, rest...):
		default:
		}
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	select {
	case u.headers <- hdr:
	default:
	}
	handle(UpstreamConn{Header: hdr, Reader: r, Conn: c})
}

// Echo copies everything after the header back until EOF, then half-closes
// its side, so that a client sees its own bytes and then EOF.
func Echo(uc UpstreamConn) {
	_, _ = io.Copy(uc.Conn, uc.Reader)
	_ = uc.Conn.CloseWrite()
}

// Addr returns the listen address ("ip:port").
func (u *Upstream) Addr() string { return u.ln.Addr().String() }

// Port returns the listen port.
func (u *Upstream) Port() int { return u.ln.Addr().(*net.TCPAddr).Port }

// NextHeader waits up to 5 seconds for the PROXY header of the next
// connection and fails t when none arrives.
func (u *Upstream) NextHeader(t testing.TB) *proxyproto.Header {
	t.Helper()
	select {
	case h := <-u.headers:
		return h
	case <-time.After(5 * time.Second):
		t.Fatal("harness: no PROXY header reached the upstream")
		return nil
	}
}

// Probes delivers the raw bytes of each readiness probe, as received: the
// PROXY header (or whatever came instead) and anything after it.
func (u *Upstream) Probes() <-chan []byte { return u.probes }

// Close stops accepting and waits for every handler to return. It is
// idempotent; t.Cleanup calls it too.
func (u *Upstream) Close() {
	u.once.Do(func() {
		_ = u.ln.Close()
		u.wg.Wait()
	})
}
