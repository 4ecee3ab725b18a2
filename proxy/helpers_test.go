package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	proxyproto "github.com/pires/go-proxyproto"
	dto "github.com/prometheus/client_model/go"
)

// upstreamConn is what a fake upstream's handler receives: the parsed
// PROXY header, a reader positioned after it, and the raw connection.
type upstreamConn struct {
	hdr  *proxyproto.Header
	r    *bufio.Reader
	conn *net.TCPConn
}

// fakeUpstream stands in for ingress-nginx: it requires a PROXY header on
// every connection, parsed with go-proxyproto's reader, then calls handle.
type fakeUpstream struct {
	ln      net.Listener
	headers chan *proxyproto.Header
	probes  chan []byte // raw bytes of each readiness probe
	wg      sync.WaitGroup
}

// newUpstream listens on host (127.0.0.1 or ::1) and serves handle for each
// connection. The listener and handlers are cleaned up with the test.
func newUpstream(t testing.TB, host string, handle func(uc upstreamConn)) *fakeUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("upstream listen: %v", err)
	}
	u := &fakeUpstream{ln: ln, headers: make(chan *proxyproto.Header, 64), probes: make(chan []byte, 64)}
	u.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.wg.Go(func() {
				defer c.Close()
				r := bufio.NewReaderSize(c, 64<<10)
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				// A readiness probe sends a header and closes: peek
				// everything it sent before parsing.
				raw, _ := r.Peek(16)
				hdr, err := proxyproto.Read(r)
				if err != nil || hdr.Command.IsLocal() {
					rest, _ := io.ReadAll(r)
					select {
					case u.probes <- append(append([]byte(nil), raw...), rest...):
					default:
					}
					return
				}
				_ = c.SetReadDeadline(time.Time{})
				select {
				case u.headers <- hdr:
				default:
				}
				handle(upstreamConn{hdr: hdr, r: r, conn: c.(*net.TCPConn)})
			})
		}
	})
	t.Cleanup(u.close)
	return u
}

func (u *fakeUpstream) close() {
	_ = u.ln.Close()
	u.wg.Wait()
}

func (u *fakeUpstream) addr() string { return u.ln.Addr().String() }

func (u *fakeUpstream) port() int { return u.ln.Addr().(*net.TCPAddr).Port }

// nextHeader waits for the header of the next relayed connection.
func (u *fakeUpstream) nextHeader(t testing.TB) *proxyproto.Header {
	t.Helper()
	select {
	case h := <-u.headers:
		return h
	case <-time.After(5 * time.Second):
		t.Fatal("no PROXY header reached the upstream")
		return nil
	}
}

// echo copies everything back until EOF, then half-closes.
func echo(uc upstreamConn) {
	_, _ = io.Copy(uc.conn, uc.r)
	_ = uc.conn.CloseWrite()
}

// testConfig is a fast-cycling config on loopback with one route named "r".
func testConfig(upstream string, mod ...func(*Config)) Config {
	c := DefaultConfig()
	c.Routes = []Route{{Name: "r", Listen: "127.0.0.1:0", Upstream: upstream}}
	c.DialTimeout = 2 * time.Second
	c.Lameduck = 0
	c.DrainTimeout = 2 * time.Second
	c.HealthAddr = "127.0.0.1:0"
	c.ReadyInterval = 50 * time.Millisecond
	c.KernelRelay = kernelRelayUnderTest
	for _, m := range mod {
		m(&c)
	}
	return c
}

// startProxy starts a Server and shuts it down with the test.
func startProxy(t testing.TB, cfg Config, opts ...Option) *Server {
	t.Helper()
	s, err := New(cfg, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	requireKernelRelay(t, s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s
}

func dialProxy(t testing.TB, s *Server, route string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr(route).String(), 2*time.Second)
	if err != nil {
		t.Fatalf("dial proxy: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn)
}

// dialExpectClosed dials the proxy and asserts that the connection is closed
// (EOF or reset) within d. The proxy may reset so fast that the reset is
// already reported by connect itself, which counts as closed too.
func dialExpectClosed(t testing.TB, s *Server, route string, d time.Duration) {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr(route).String(), 2*time.Second)
	if errors.Is(err, syscall.ECONNRESET) {
		return
	}
	if err != nil {
		t.Fatalf("dial proxy: %v", err)
	}
	defer c.Close()
	expectClosed(t, c, d)
}

// metricValue reads one series from the server's own registry; a missing
// series reads as 0.
func metricValue(t testing.TB, s *Server, name string, labels map[string]string) float64 {
	t.Helper()
	fams, err := s.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !labelsMatch(m, labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// expectClosed asserts that the peer closes c (EOF or reset) within d,
// without sending data.
func expectClosed(t testing.TB, c net.Conn, d time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 1)
	n, err := c.Read(buf)
	if n > 0 {
		t.Fatalf("expected close, read %q", buf[:n])
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %s", d)
	}
}

// get performs a request against the server's health handler.
func get(s *Server, path string) (int, string) {
	rec := httptest.NewRecorder()
	s.HealthHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, strings.TrimSpace(rec.Body.String())
}
