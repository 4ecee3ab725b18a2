package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

func TestReadyzFollowsUpstreamAndShutdown(t *testing.T) {
	// An upstream we can take down and bring back on the same port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	serve := func(ln net.Listener) {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
			}
		}()
	}
	serve(ln)

	s := startProxy(t, testConfig(addr))
	if code, _ := get(s, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz = %d, want 200", code)
	}
	harness.Eventually(t, 2*time.Second, "ready while upstream accepts", func() bool { code, _ := get(s, "/readyz"); return code == 200 })

	_ = ln.Close()
	harness.Eventually(t, 2*time.Second, "not ready while upstream is down", func() bool { code, _ := get(s, "/readyz"); return code == 503 })
	if _, body := get(s, "/readyz"); !strings.Contains(body, addr) {
		t.Errorf("/readyz body %q does not name the upstream %s", body, addr)
	}
	if v := metricValue(t, s, "hairpin_proxy_upstream_up", map[string]string{"route": "r"}); v != 0 {
		t.Errorf("upstream_up = %v, want 0", v)
	}

	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot re-listen on %s: %v", addr, err)
	}
	defer ln.Close()
	serve(ln)
	harness.Eventually(t, 2*time.Second, "ready again", func() bool { code, _ := get(s, "/readyz"); return code == 200 })

	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	code, body := get(s, "/readyz")
	if code != 503 || !strings.Contains(body, "shutting down") {
		t.Fatalf("/readyz after shutdown = %d %q, want 503 shutting down", code, body)
	}
	if code, _ := get(s, "/healthz"); code != 200 {
		t.Fatalf("/healthz after shutdown = %d, want 200 (alive until exit)", code)
	}
}

// TestReadyzDoesNotDialPerProbe: probes read state; only the background
// checker dials.
func TestReadyzDoesNotDialPerProbe(t *testing.T) {
	dials := make(chan struct{}, 1000)
	dialer := func(ctx context.Context, network, address string) (net.Conn, error) {
		dials <- struct{}{}
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}
	up := harness.StartUpstream(t, "127.0.0.1", harness.Echo)
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.ReadyInterval = time.Hour }), withDialFunc(dialer))
	harness.Eventually(t, 2*time.Second, "ready", s.ready)
	for range 50 {
		get(s, "/readyz")
	}
	if n := len(dials); n != 1 {
		t.Fatalf("%d dials after 50 probes, want just the 1 background check", n)
	}
}

func TestHealthServerExposesMetrics(t *testing.T) {
	up := harness.StartUpstream(t, "127.0.0.1", harness.Echo)
	s := startProxy(t, testConfig(up.Addr()))
	c := dialProxy(t, s, "r")
	_, _ = c.Write([]byte("abc"))
	_ = c.CloseWrite()
	_, _ = io.ReadAll(c)

	base := "http://" + s.HealthAddr().String()
	harness.Eventually(t, 2*time.Second, "ready over HTTP", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	wants := []string{
		`hairpin_proxy_connections_accepted_total{route="r"} 1`,
		`hairpin_proxy_connections_active{route="r"} 0`,
		`hairpin_proxy_connections_refused_total{reason="cap",route="r"} 0`,
		`hairpin_proxy_connections_closed_total{reason="eof",route="r"} 1`,
		`hairpin_proxy_bytes_total{direction="client_to_upstream",route="r"} 3`,
		`hairpin_proxy_bytes_total{direction="upstream_to_client",route="r"} 3`,
		`hairpin_proxy_upstream_dial_errors_total{cause="timeout",route="r"} 0`,
		`hairpin_proxy_upstream_dial_duration_seconds_count{route="r"} 1`,
		`hairpin_proxy_connection_duration_seconds_count{route="r"} 1`,
		`hairpin_proxy_upstream_up{route="r"} 1`,
		`hairpin_proxy_ready 1`,
		`hairpin_proxy_build_info{version="dev"} 1`,
		`go_goroutines`,
	}
	// The connection's close is booked just after the relay returns, so
	// wait for every series rather than for the bytes alone.
	var text string
	deadline := time.Now().Add(2 * time.Second)
	for {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		text = string(b)
		missing := slices.DeleteFunc(slices.Clone(wants), func(w string) bool { return strings.Contains(text, w) })
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, w := range missing {
				t.Errorf("/metrics lacks %s", w)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadinessProbeSendsValidHeaderBeforeClosing: a probe that closed
// without a header would make nginx log "broken header" every interval.
func TestReadinessProbeSendsValidHeaderBeforeClosing(t *testing.T) {
	tests := []struct {
		version int
		want    []byte
	}{
		{1, []byte("PROXY UNKNOWN\r\n")},
		// v2 signature, version 2 + LOCAL (0x20), UNSPEC (0x00), length 0.
		{2, []byte("\r\n\r\n\x00\r\nQUIT\n\x20\x00\x00\x00")},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("v%d", tc.version), func(t *testing.T) {
			up := harness.StartUpstream(t, "127.0.0.1", harness.Echo)
			startProxy(t, testConfig(up.Addr(), func(c *Config) { c.ProxyProtocol = tc.version }))
			for range 3 {
				select {
				case got := <-up.Probes():
					if !bytes.Equal(got, tc.want) {
						t.Fatalf("probe sent %q, want %q", got, tc.want)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("no readiness probe reached the upstream")
				}
			}
		})
	}
}

// TestBrokenUpstreamKeepsOtherRoutesReadyAndServing: one process serves the
// routes of every target, so a dead upstream must take only its own route
// down. /readyz stays 200 and names the broken route; only when every
// upstream is down does it fail.
func TestBrokenUpstreamKeepsOtherRoutesReadyAndServing(t *testing.T) {
	good := harness.StartUpstream(t, "127.0.0.1", harness.Echo)
	dead := closedPort(t)
	s := startProxy(t, testConfig(good.Addr(), func(c *Config) {
		c.Routes = []Route{
			{Name: "tenant-a", Listen: "127.0.0.1:0", Upstream: good.Addr()},
			{Name: "tenant-b", Listen: "127.0.0.1:0", Upstream: dead},
		}
	}))
	harness.Eventually(t, 2*time.Second, "tenant-b checked and down", func() bool {
		return metricValue(t, s, "hairpin_proxy_upstream_up", map[string]string{"route": "tenant-a"}) == 1 &&
			!s.routes[1].up.Load() && s.ready()
	})
	for range 3 { // across several check intervals
		time.Sleep(2 * s.cfg.ReadyInterval)
		code, body := get(s, "/readyz")
		if code != http.StatusOK {
			t.Fatalf("/readyz = %d %q with one of two upstreams down, want 200", code, body)
		}
		if !strings.Contains(body, "1 of 2 upstreams down") || !strings.Contains(body, "route tenant-b: upstream "+dead+" down") {
			t.Fatalf("/readyz body %q does not name the broken route", body)
		}
	}
	if v := metricValue(t, s, "hairpin_proxy_upstream_up", map[string]string{"route": "tenant-b"}); v != 0 {
		t.Fatalf("upstream_up{tenant-b} = %v, want 0", v)
	}
	if v := metricValue(t, s, "hairpin_proxy_ready", nil); v != 1 {
		t.Fatalf("hairpin_proxy_ready = %v, want 1", v)
	}
	_, body := get(s, "/readyz?verbose")
	if !strings.Contains(body, "route tenant-a: upstream "+good.Addr()+" up") {
		t.Fatalf("/readyz?verbose %q does not list the healthy route", body)
	}

	c := dialProxy(t, s, "tenant-a")
	if _, err := c.Write([]byte("still served")); err != nil {
		t.Fatal(err)
	}
	_ = c.CloseWrite()
	if got, err := io.ReadAll(c); err != nil || string(got) != "still served" {
		t.Fatalf("healthy route echo = %q, %v", got, err)
	}
	dialExpectClosed(t, s, "tenant-b", 2*time.Second)

	good.Close()
	harness.Eventually(t, 2*time.Second, "not ready once every upstream is down", func() bool {
		code, _ := get(s, "/readyz")
		return code == http.StatusServiceUnavailable && !s.ready()
	})
	if _, body := get(s, "/readyz"); !strings.Contains(body, "every upstream is down") {
		t.Fatalf("/readyz body %q", body)
	}
}
