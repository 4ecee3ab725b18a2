package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/proxy/internal/sockmap"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// kernelSuiteEnv, set to 1, runs this package's tests with
// Config.KernelRelay on (testConfig reads it): TestKernelRelayPassesTheRelayTests
// re-runs the correctness tests that way.
const kernelSuiteEnv = "HAIRPIN_PROXY_TEST_KERNEL_RELAY"

var kernelRelayUnderTest = os.Getenv(kernelSuiteEnv) == "1"

// requireKernelRelay fails a test run in the kernel suite whose server fell
// back to the userspace relay: that run would prove nothing.
func requireKernelRelay(t testing.TB, s *Server) {
	t.Helper()
	if !kernelRelayUnderTest || !s.cfg.KernelRelay {
		return
	}
	if s.kernel == nil {
		t.Fatal("kernel suite: the in-kernel relay did not load; see the log line")
	}
	// Connections with a socket that got a FIN before the handover are relayed
	// in userspace; say how many, so the suite's coverage is visible.
	t.Cleanup(func() {
		if v := metricValue(t, s, "hairpin_proxy_kernel_relay_userspace_total", nil); v > 0 {
			t.Logf("kernel suite: %v connection(s) relayed in userspace (a FIN arrived before the handover)", v)
		}
	})
}

// skipWithoutKernelRelay skips unless the in-kernel relay loads here.
func skipWithoutKernelRelay(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("in-kernel relay needs CAP_BPF and CAP_NET_ADMIN; not root")
	}
	r, err := sockmap.Open(sockmap.Options{MaxPairs: 1})
	if errors.Is(err, sockmap.ErrUnsupported) {
		t.Skipf("kernel lacks sockhash/SK_SKB support: %v", err)
	}
	if err != nil {
		t.Fatalf("sockmap.Open: %v", err)
	}
	_ = r.Close()
}

// kernelSuite is what the in-kernel path must pass as the default path
// does: byte-exact both ways, half-close, idle timeout, drain on shutdown,
// the connection cap, bytes in the metrics, no leak after 10,000
// connections (with no pair or map entry left, assertNoKernelLeak).
// TestClientFirstBytesTravelWithHeader is not in it: the kernel path writes
// the header alone, by design (see handOver).
var kernelSuite = []string{
	"TestLargeTransferBothWaysIsByteExact",
	"TestConcurrentMixedTrafficIsByteExact",
	"TestBytesQueuedBeforeAResetAreDelivered",
	"TestHalfCloseReachesUpstreamAndResponseStillArrives",
	"TestIdleTimeoutClosesSilentConnection",
	"TestIdleTimeoutSparesOneWayTraffic",
	"TestIdleTimeoutWhenPeerStopsReading",
	"TestConnectionCapRefusesBeyondCapAndRecovers",
	"TestDrainLetsInFlightFinishAndRefusesNew",
	"TestDrainTimeoutClosesRemainingConnections",
	"TestShutdownContextCancelClosesAtOnce",
	"TestManyShortConnectionsLeakNothing",
	"TestProxyWritesHeaderWithClientAndLocalAddress",
	"TestServerFirstProtocolIsNotDelayed",
	"TestHeaderPortOverrideIsWritten",
	"TestHealthServerExposesMetrics",
}

// TestKernelRelayPassesTheRelayTests re-runs the correctness tests in a
// child process with the in-kernel relay on.
func TestKernelRelayPassesTheRelayTests(t *testing.T) {
	if kernelRelayUnderTest {
		t.Skip("already the kernel suite")
	}
	skipWithoutKernelRelay(t)
	args := []string{"-test.run=^(" + strings.Join(kernelSuite, "|") + ")$", "-test.count=1", "-test.v"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), kernelSuiteEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kernel suite failed: %v\n%s", err, out)
	}
	for _, name := range kernelSuite {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") && !strings.Contains(string(out), "--- SKIP: "+name+" ") {
			t.Errorf("kernel suite: %s did not run", name)
		}
	}
	for line := range strings.Lines(string(out)) {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "--- ") || strings.Contains(l, "kernel suite:") {
			t.Log(l)
		}
	}
}

// assertNoKernelLeak fails if the in-kernel relay still tracks a pair or
// holds a map entry; a no-op on the userspace path.
func assertNoKernelLeak(t testing.TB, s *Server) {
	t.Helper()
	if s.kernel == nil {
		return
	}
	if n := s.kernel.Pairs(); n != 0 {
		t.Errorf("in-kernel relay still tracks %d pairs", n)
	}
	n, err := s.kernel.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("in-kernel relay maps hold %d entries", n)
	}
}

func kernelState(t testing.TB, s *Server) string {
	t.Helper()
	for _, st := range []string{kernelOff, kernelActive, kernelFallback} {
		if metricValue(t, s, "hairpin_proxy_kernel_relay", map[string]string{"state": st}) == 1 {
			return st
		}
	}
	return "none"
}

// TestKernelRelayHalfClosesEachWay runs both half-close orders through the
// kernel path (each side closes only after the handover, so no connection
// falls back): the first FIN reaches the far side as EOF, the reply after
// it still arrives, the connection ends as eof with its bytes counted, and
// no connection went to userspace.
func TestKernelRelayHalfClosesEachWay(t *testing.T) {
	skipWithoutKernelRelay(t)
	for _, tc := range []struct {
		name        string
		clientFirst bool
		toUp, toCli string
	}{
		{"client closes first", true, "request", "got request"},
		{"upstream closes first", false, "request then bye", "response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upGot := make(chan string, 1)
			handedOver := make(chan struct{})
			up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
				req := make([]byte, len("request"))
				if _, err := io.ReadFull(uc.Reader, req); err != nil {
					upGot <- err.Error()
					return
				}
				if tc.clientFirst {
					rest, _ := io.ReadAll(uc.Reader) // until the client's FIN
					upGot <- string(req) + string(rest)
					_, _ = uc.Conn.Write([]byte("got " + string(req)))
					_ = uc.Conn.CloseWrite()
					return
				}
				// Answer only once the kernel has the sockets: a FIN before
				// the handover sends the connection to userspace.
				<-handedOver
				_, _ = uc.Conn.Write([]byte("response"))
				_ = uc.Conn.CloseWrite()
				rest, _ := io.ReadAll(uc.Reader)
				upGot <- string(req) + string(rest)
			})
			s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.KernelRelay = true }))
			if st := kernelState(t, s); st != kernelActive {
				t.Fatalf("kernel_relay state %q, want %q", st, kernelActive)
			}
			c := dialProxy(t, s, "r")
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write([]byte("request")); err != nil {
				t.Fatal(err)
			}
			// Either side closes only once the kernel has the sockets: a FIN
			// before the handover sends the connection to userspace.
			harness.Eventually(t, 2*time.Second, "handover", func() bool { return kernelPairs(s) == 1 })
			close(handedOver)
			if tc.clientFirst {
				_ = c.CloseWrite()
			}
			got, err := io.ReadAll(c)
			if err != nil || string(got) != tc.toCli {
				t.Fatalf("client read %q, %v; want %q then EOF", got, err, tc.toCli)
			}
			if !tc.clientFirst {
				_, _ = c.Write([]byte(" then bye"))
				_ = c.CloseWrite()
			}
			if g := <-upGot; g != tc.toUp {
				t.Fatalf("upstream read %q, want %q then EOF", g, tc.toUp)
			}
			harness.Eventually(t, 2*time.Second, "closed{eof} and bytes", func() bool {
				return metricValue(t, s, "hairpin_proxy_connections_closed_total", map[string]string{"route": "r", "reason": closedEOF}) == 1 &&
					metricValue(t, s, "hairpin_proxy_bytes_total", map[string]string{"route": "r", "direction": dirToUp}) == float64(len(tc.toUp)) &&
					metricValue(t, s, "hairpin_proxy_bytes_total", map[string]string{"route": "r", "direction": dirToClient}) == float64(len(tc.toCli))
			})
			if v := metricValue(t, s, "hairpin_proxy_kernel_relay_userspace_total", nil); v != 0 {
				t.Fatalf("kernel_relay_userspace_total = %v, want 0: the connection was not relayed by the kernel", v)
			}
		})
	}
}

func kernelPairs(s *Server) int {
	if s.kernel == nil {
		return 0
	}
	return s.kernel.Pairs()
}

// TestKernelRelayFallsBackWhenUnsupported: when loading fails for lack of
// support or privileges (sockmap's tests show the real errors as non-root
// and with too few capabilities), the proxy serves on the userspace path,
// with the gauge saying fallback.
func TestKernelRelayFallsBackWhenUnsupported(t *testing.T) {
	real := openKernelRelay
	t.Cleanup(func() { openKernelRelay = real })
	openKernelRelay = func(sockmap.Options) (*sockmap.Relay, error) {
		return nil, fmt.Errorf("create sockhash: %w: operation not permitted", sockmap.ErrUnsupported)
	}
	up := harness.StartUpstream(t, "127.0.0.1", harness.Echo)
	cfg := testConfig(up.Addr(), func(c *Config) { c.KernelRelay = true })
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start with the kernel relay unavailable: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	if st := kernelState(t, s); st != kernelFallback {
		t.Fatalf("kernel_relay state %q, want %q", st, kernelFallback)
	}
	c := dialProxy(t, s, "r")
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	_ = c.CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(c); err != nil || string(got) != "ping" {
		t.Fatalf("echo %q, %v", got, err)
	}
}

// TestKernelRelayHandsHalfClosedClientToUserspace: a client whose request
// and FIN arrive before the upstream dial completes cannot enter the
// sockhash; that connection is relayed in userspace, whole, and counted.
func TestKernelRelayHandsHalfClosedClientToUserspace(t *testing.T) {
	skipWithoutKernelRelay(t)
	up := harness.StartUpstream(t, "127.0.0.1", harness.Echo)
	var d net.Dialer
	slow := func(ctx context.Context, network, addr string) (net.Conn, error) {
		time.Sleep(100 * time.Millisecond) // the client's FIN lands meanwhile
		return d.DialContext(ctx, network, addr)
	}
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.KernelRelay = true }), WithDialFunc(slow))
	c := dialProxy(t, s, "r")
	if _, err := c.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	_ = c.CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(c); err != nil || string(got) != "request" {
		t.Fatalf("echo %q, %v", got, err)
	}
	harness.Eventually(t, 2*time.Second, "kernel_relay_userspace_total", func() bool {
		return metricValue(t, s, "hairpin_proxy_kernel_relay_userspace_total", nil) == 1
	})
}
