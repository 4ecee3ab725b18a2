package harness

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// PodNetwork stands in for the pod network that kube-apiserver's proxy
// subresources (pods/proxy, services/proxy) dial. The apiserver refuses to
// proxy to a loopback pod IP, so pods get addresses from the test cluster's
// range (198.18.0.0/15, docs/architecture.md) and the apiserver is started with an egress
// selector that sends its "cluster" traffic through an HTTP CONNECT server
// on a unix socket. That server connects each pod address that a test
// routed to a loopback listener, and answers 502 for any other: nothing
// ever dials a pod address.
//
//	pn := harness.StartPodNetwork(t)
//	cp := harness.NewControlPlane(t, harness.ControlPlaneOptions{APIServerFlags: pn.APIServerFlags()})
//	pn.Serve(t, "198.18.0.10:9153", metricsHandler) // then GET pods/NAME:9153/proxy/metrics
type PodNetwork struct {
	dir    string
	socket string
	ln     net.Listener

	mu     sync.Mutex
	routes map[string]string // pod "ip:port" -> loopback "ip:port"
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// StartPodNetwork starts the CONNECT server and writes the egress selector
// configuration; both are removed when t ends. Pass APIServerFlags to the
// control plane.
func StartPodNetwork(t testing.TB) *PodNetwork {
	t.Helper()
	// A unix socket path must stay under 108 bytes; t.TempDir()'s can
	// be longer.
	dir, err := os.MkdirTemp("", "podnet-")
	if err != nil {
		t.Fatalf("harness: pod network: %v", err)
	}
	pn := &PodNetwork{dir: dir, socket: filepath.Join(dir, "connect.sock"), routes: map[string]string{}, conns: map[net.Conn]struct{}{}}
	if pn.ln, err = net.Listen("unix", pn.socket); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("harness: pod network: %v", err)
	}
	config := fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, pn.socket)
	if err := os.WriteFile(filepath.Join(dir, "egress.yaml"), []byte(config), 0o600); err != nil {
		pn.ln.Close()
		os.RemoveAll(dir)
		t.Fatalf("harness: pod network: %v", err)
	}
	pn.wg.Go(pn.accept)
	t.Cleanup(pn.close)
	return pn
}

// APIServerFlags are the kube-apiserver flags that send pod traffic
// through the network (ControlPlaneOptions.APIServerFlags).
func (pn *PodNetwork) APIServerFlags() map[string][]string {
	return map[string][]string{"egress-selector-config-file": {filepath.Join(pn.dir, "egress.yaml")}}
}

// Route sends the apiserver's connections for podAddr ("ip:port") to addr,
// a loopback listener.
func (pn *PodNetwork) Route(podAddr, addr string) {
	pn.mu.Lock()
	defer pn.mu.Unlock()
	pn.routes[podAddr] = addr
}

// Unroute makes podAddr unreachable again.
func (pn *PodNetwork) Unroute(podAddr string) {
	pn.mu.Lock()
	defer pn.mu.Unlock()
	delete(pn.routes, podAddr)
}

// Serve answers HTTP for podAddr with h, from a loopback server that is
// closed when t ends.
func (pn *PodNetwork) Serve(t testing.TB, podAddr string, h http.Handler) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		pn.Unroute(podAddr)
		srv.Close()
	})
	pn.Route(podAddr, srv.Listener.Addr().String())
}

func (pn *PodNetwork) accept() {
	for {
		c, err := pn.ln.Accept()
		if err != nil {
			return
		}
		pn.mu.Lock()
		pn.conns[c] = struct{}{}
		pn.mu.Unlock()
		pn.wg.Go(func() {
			pn.tunnel(c)
			pn.mu.Lock()
			delete(pn.conns, c)
			pn.mu.Unlock()
		})
	}
}

// tunnel serves one CONNECT: the apiserver writes "CONNECT ip:port" and,
// after a 200, speaks to the pod over the same connection.
func (pn *PodNetwork) tunnel(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	pn.mu.Lock()
	addr, ok := pn.routes[req.Host]
	pn.mu.Unlock()
	if req.Method != http.MethodConnect || !ok {
		fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	up, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		// The apiserver speaks first; what it sent after the CONNECT
		// may already sit in br.
		_, _ = io.Copy(up, br)
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		close(done)
	}()
	_, _ = io.Copy(c, up)
	c.Close()
	<-done
}

func (pn *PodNetwork) close() {
	pn.ln.Close()
	pn.mu.Lock()
	for c := range pn.conns {
		c.Close()
	}
	pn.mu.Unlock()
	pn.wg.Wait()
	os.RemoveAll(pn.dir)
}
