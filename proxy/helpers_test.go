package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// testConfig is a fast-cycling config on loopback with one route named "r".
func testConfig(upstream string, mod ...func(*Config)) Config {
	c := DefaultConfig()
	c.Routes = []Route{{Name: "r", Listen: "127.0.0.1:0", Upstream: upstream}}
	c.DialTimeout = 2 * time.Second
	c.Lameduck = 0
	c.DrainTimeout = 2 * time.Second
	c.HealthAddr = "127.0.0.1:0"
	c.ReadyInterval = 50 * time.Millisecond
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
	fams, err := s.metrics.reg.Gather()
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
	s.health.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, strings.TrimSpace(rec.Body.String())
}
