package node

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// TestPortForwardRelaysToThePodsLoopback calls the kubelet API's
// port-forward handler with a stream as virtual-kubelet hands it one: the
// bytes reach a server that listens on the loopback of the Pod's network
// namespace only (the test's own namespace has no such listener), the
// client's end of sending reaches it as a half-close, and its answer comes
// back; a port nothing listens on and a Pod the node does not run are
// errors at once, not a hang.
func TestPortForwardRelaysToThePodsLoopback(t *testing.T) {
	harness.RequireRoot(t, "port-forward", "ip")
	ns, err := netns.New("portforward")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	n, p, _ := unitNode(t, corev1.Container{})
	p.mu.Lock()
	p.net = &podNetwork{ns: ns}
	p.mu.Unlock()
	v4 := upperServer(t, ns, "127.0.0.1:0")
	v6 := upperServer(t, ns, "[::1]:0")
	l, err := ns.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := l.Addr().(*net.TCPAddr).Port
	l.Close()

	for _, tc := range []struct {
		name    string
		pod     string
		port    int
		send    string
		want    string
		wantErr string
	}{
		{name: "BytesBothWaysToAListenerOnThePodsLoopbackOnly", pod: "web", port: v4, send: "hello\n", want: "HELLO\n"},
		{name: "IPv6LoopbackWhenIPv4HasNoListener", pod: "web", port: v6, send: "hello\n", want: "HELLO\n"},
		{name: "PortNothingListensOnIsAnErrorNotAHang", pod: "web", port: free, wantErr: "connection refused"},
		{name: "PodNotOnTheNodeIsAnError", pod: "gone", port: v4, wantErr: "no running pod ns/gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			s := newTestStream()
			defer s.PipeReader.Close()
			go func() {
				if tc.send != "" {
					_, _ = io.WriteString(s.client, tc.send)
				}
				_ = s.client.Close()
			}()
			errc := make(chan error, 1)
			go func() { errc <- n.portForwardHandler(ctx, "ns", tc.pod, int32(tc.port), s) }()
			var err error
			select {
			case err = <-errc:
			case <-ctx.Done():
				t.Fatalf("port-forward to port %d still runs after %s", tc.port, 10*time.Second)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("port-forward = %v; want an error holding %q", err, tc.wantErr)
			}
			if got := s.received(); got != tc.want {
				t.Fatalf("the client got %q; want %q", got, tc.want)
			}
		})
	}
}

// upperServer serves on addr in ns: it reads a connection to its end and
// answers with what it read in upper case; it returns its port.
func upperServer(t *testing.T, ns *netns.NS, addr string) int {
	t.Helper()
	l, err := ns.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	harness.Serve(t, l, func(c *net.TCPConn) {
		b, _ := io.ReadAll(c)
		_, _ = c.Write(bytes.ToUpper(b))
	})
	return l.Addr().(*net.TCPAddr).Port
}

// testStream is a port-forward data stream: it reads what the client
// writes into client and keeps what the handler writes for the client.
type testStream struct {
	*io.PipeReader
	client *io.PipeWriter
	mu     sync.Mutex
	got    bytes.Buffer
}

func newTestStream() *testStream {
	r, w := io.Pipe()
	return &testStream{PipeReader: r, client: w}
}

func (s *testStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got.Write(p)
}

func (s *testStream) Close() error { return nil }

func (s *testStream) received() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got.String()
}
