package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func TestDeadUpstreamClosesClientAndCountsRefusedDial(t *testing.T) {
	s := startProxy(t, testConfig(closedPort(t)))
	start := time.Now()
	dialExpectClosed(t, s, "r", 2*time.Second)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("client closed after %s, want promptly", d)
	}
	harness.Eventually(t, 2*time.Second, "dial error metric", func() bool {
		return metricValue(t, s, "hairpin_proxy_upstream_dial_errors_total", map[string]string{"route": "r", "cause": dialErrRefused}) == 1 &&
			metricValue(t, s, "hairpin_proxy_connections_refused_total", map[string]string{"route": "r", "reason": refusedDial}) == 1
	})
}

// TestSlowUpstreamDialTimesOut simulates a blackholed upstream with a dialer
// that never completes, so no packets leave loopback.
func TestSlowUpstreamDialTimesOut(t *testing.T) {
	blackhole := func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	s := startProxy(t, testConfig("upstream.invalid:80", func(c *Config) { c.DialTimeout = 200 * time.Millisecond }),
		withDialFunc(blackhole))
	c := dialProxy(t, s, "r")
	start := time.Now()
	expectClosed(t, c, 3*time.Second)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("closed after %s, before the dial timeout", d)
	}
	harness.Eventually(t, 2*time.Second, "timeout metric", func() bool {
		return metricValue(t, s, "hairpin_proxy_upstream_dial_errors_total", map[string]string{"route": "r", "cause": dialErrTimeout}) == 1
	})
}

func TestClassifyDialError(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, dialErrRefused},
		{&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", IsNotFound: true}}, dialErrDNS},
		{&net.DNSError{Err: "timeout", IsTimeout: true}, dialErrDNS},
		{fmt.Errorf("dial: %w", context.DeadlineExceeded), dialErrTimeout},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, dialErrOther},
	}
	for _, tc := range tests {
		if got := classifyDialError(tc.err); got != tc.want {
			t.Errorf("classifyDialError(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

// holdUpstream keeps every relayed connection open until the test ends and
// reports each one on accepted.
func holdUpstream(t *testing.T) (*harness.Upstream, chan struct{}) {
	accepted := make(chan struct{}, 16)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
		accepted <- struct{}{}
		go func() { <-release; _ = uc.Conn.Close() }()
		_, _ = io.Copy(io.Discard, uc.Reader)
	})
	return up, accepted
}

func waitN(t *testing.T, ch chan struct{}, n int) {
	t.Helper()
	for range n {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("upstream connection not established")
		}
	}
}

func TestConnectionCapRefusesBeyondCapAndRecovers(t *testing.T) {
	up, accepted := holdUpstream(t)
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.MaxConns = 2 }))
	c1 := dialProxy(t, s, "r")
	_ = dialProxy(t, s, "r")
	waitN(t, accepted, 2)

	start := time.Now()
	dialExpectClosed(t, s, "r", 2*time.Second)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("over-cap connection closed after %s, want at once", d)
	}
	if v := metricValue(t, s, "hairpin_proxy_connections_refused_total", map[string]string{"route": "r", "reason": refusedCap}); v != 1 {
		t.Fatalf("refused{cap} = %v, want 1", v)
	}

	_ = c1.Close()
	harness.Eventually(t, 3*time.Second, "slot released", func() bool {
		return metricValue(t, s, "hairpin_proxy_connections_active", map[string]string{"route": "r"}) == 1
	})
	_ = dialProxy(t, s, "r")
	waitN(t, accepted, 1)
}

// TestDrainLetsInFlightFinishAndRefusesNew drives Shutdown directly: /readyz
// fails at once, new connections are refused after the lameduck, and an
// in-flight exchange completes.
func TestDrainLetsInFlightFinishAndRefusesNew(t *testing.T) {
	up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
		// Line-by-line echo, so the test controls when the exchange ends.
		_, _ = io.Copy(uc.Conn, uc.Reader)
		_ = uc.Conn.CloseWrite()
	})
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) {
		c.Lameduck = 200 * time.Millisecond
		c.DrainTimeout = 10 * time.Second
	}))
	harness.Eventually(t, 2*time.Second, "ready", s.ready)
	addr := s.Addr("r").String()
	c := dialProxy(t, s, "r")
	br := bufio.NewReader(c)
	roundTrip := func(msg string) {
		t.Helper()
		if _, err := fmt.Fprintln(c, msg); err != nil {
			t.Fatalf("write %q: %v", msg, err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := br.ReadString('\n')
		if err != nil || line != msg+"\n" {
			t.Fatalf("echo of %q: %q, %v", msg, line, err)
		}
	}
	roundTrip("before")

	done := make(chan error, 1)
	begun := time.Now()
	go func() { done <- s.Shutdown(context.Background()) }()

	harness.Eventually(t, time.Second, "readyz failing", func() bool { code, _ := get(s, "/readyz"); return code == 503 })
	if time.Since(begun) > 150*time.Millisecond {
		t.Fatalf("/readyz took %s to fail", time.Since(begun))
	}
	// During the lameduck new clients are still served.
	if lc, err := net.Dial("tcp", addr); err != nil {
		t.Fatalf("dial during lameduck: %v", err)
	} else {
		_ = lc.Close()
	}
	// After the lameduck the listener is gone.
	harness.Eventually(t, 2*time.Second, "listener closed", func() bool {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = nc.Close()
			return false
		}
		return errors.Is(err, syscall.ECONNREFUSED)
	})

	roundTrip("during drain")
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) while a connection was in flight", err)
	default:
	}
	_ = c.CloseWrite()
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after half-close: %q, %v", rest, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return after the last connection ended")
	}
	if v := metricValue(t, s, "hairpin_proxy_connections_closed_total", map[string]string{"route": "r", "reason": closedDrain}); v != 0 {
		t.Fatalf("closed{drain} = %v, want 0", v)
	}
}

func TestDrainTimeoutClosesRemainingConnections(t *testing.T) {
	up, accepted := holdUpstream(t)
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.DrainTimeout = 300 * time.Millisecond }))
	c := dialProxy(t, s, "r")
	waitN(t, accepted, 1)
	start := time.Now()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
		t.Fatalf("Shutdown took %s, want about the 300ms drain timeout", d)
	}
	expectClosed(t, c, time.Second)
	if v := metricValue(t, s, "hairpin_proxy_connections_closed_total", map[string]string{"route": "r", "reason": closedDrain}); v != 1 {
		t.Fatalf("closed{drain} = %v, want 1", v)
	}
}

func TestShutdownContextCancelClosesAtOnce(t *testing.T) {
	up, accepted := holdUpstream(t)
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) {
		c.Lameduck = time.Minute
		c.DrainTimeout = time.Minute
	}))
	c := dialProxy(t, s, "r")
	waitN(t, accepted, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Shutdown took %s despite the cancelled context", d)
	}
	expectClosed(t, c, time.Second)
}

// TestManyShortConnectionsLeakNothing runs 10,000 request/response
// connections and checks that goroutines and file descriptors return to
// their baseline.
func TestManyShortConnectionsLeakNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 connections skipped in -short mode")
	}
	up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
		buf := make([]byte, 4)
		if _, err := io.ReadFull(uc.Reader, buf); err == nil {
			_, _ = uc.Conn.Write([]byte("pong"))
		}
	})
	s := startProxy(t, testConfig(up.Addr()))
	addr := s.Addr("r").String()
	oneConn := func() error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		if string(buf) != "pong" {
			return fmt.Errorf("got %q", buf)
		}
		return nil
	}
	// Warm up pools (splice pipes, timers) before taking the baseline.
	for range 20 {
		if err := oneConn(); err != nil {
			t.Fatal(err)
		}
	}
	settle := func() (int, int) {
		runtime.GC()
		runtime.GC()
		return runtime.NumGoroutine(), harness.OpenFDs(t)
	}
	harness.Eventually(t, 5*time.Second, "warm-up connections closed", func() bool {
		return metricValue(t, s, "hairpin_proxy_connections_active", map[string]string{"route": "r"}) == 0
	})
	baseG, baseFD := settle()

	const total, workers = 10000, 8
	var next atomic.Int64
	var failed atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= total {
				if err := oneConn(); err != nil {
					failed.Add(1)
					once.Do(func() { firstErr = err })
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d connections failed; first: %v", n, total, firstErr)
	}

	var g, fd int
	deadline := time.Now().Add(15 * time.Second)
	for {
		g, fd = settle()
		if g <= baseG+5 && fd <= baseFD+10 {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("after %d connections: goroutines %d (baseline %d), fds %d (baseline %d)\n%s",
				total, g, baseG, fd, baseFD, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("after %d connections: goroutines %d (baseline %d), fds %d (baseline %d)", total, g, baseG, fd, baseFD)
	if v := metricValue(t, s, "hairpin_proxy_connections_accepted_total", map[string]string{"route": "r"}); v < total {
		t.Fatalf("accepted = %v, want >= %d", v, total)
	}
}

// TestAbortDuringAdmitIsSafe closes every connection over and over while
// new ones are admitted: a connection must be complete (its cancel function
// included) before shutdown can see it. Run with -race.
func TestAbortDuringAdmitIsSafe(t *testing.T) {
	up := harness.StartUpstream(t, "127.0.0.1", harness.Echo)
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.MaxConns = 0 }))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				s.abortAll(closedDrain)
			}
		}
	})
	var dialers sync.WaitGroup
	for range 8 {
		dialers.Go(func() {
			for range 200 {
				c, err := net.Dial("tcp", s.Addr("r").String())
				if err == nil {
					_ = c.Close()
				}
			}
		})
	}
	dialers.Wait()
	close(stop)
	wg.Wait()
}
