package sockmap

import (
	"errors"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// TestAttachCopyContract is the contract the proxy's relay builds on: Copy
// publishes bytes while it runs, returns nil at src's EOF once everything
// reached the peer, and leaves the half-close and the closes to the caller;
// closing a socket makes a blocked Copy return; Release empties the maps.
func TestAttachCopyContract(t *testing.T) {
	r := openRelay(t)
	c := connect(t, nil)
	p, err := r.Attach(c.proxyClient, c.proxyUp)
	if err != nil {
		t.Fatal(err)
	}
	var up, down atomic.Int64
	upDone, downDone := make(chan error, 1), make(chan error, 1)
	go func() { upDone <- p.Copy(c.proxyClient, &up, 20*time.Millisecond) }()
	go func() { downDone <- p.Copy(c.proxyUp, &down, 20*time.Millisecond) }()

	if _, err := c.client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	expectRead(t, c.server, "hello")
	waitFor(t, "moved to reach 5 while Copy runs", func() bool { return up.Load() == 5 })

	_ = c.client.CloseWrite()
	select {
	case err := <-upDone:
		if err != nil {
			t.Fatalf("Copy at EOF: %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Copy did not return at the client's EOF")
	}
	// Copy forwarded no FIN: the upstream still waits for one.
	_ = c.server.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var ne net.Error
	if _, err := c.server.Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("upstream read %v before the caller's half-close, want a timeout", err)
	}
	_ = c.proxyUp.CloseWrite()
	_ = c.server.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.server.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("upstream read %v after the caller's half-close, want EOF", err)
	}

	// A closed socket ends the other Copy.
	_ = c.proxyClient.Close()
	_ = c.proxyUp.Close()
	select {
	case err := <-downDone:
		if err == nil {
			t.Fatal("Copy returned nil after its sockets were closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Copy still blocked after its sockets were closed")
	}
	if up.Load() != 5 || down.Load() != 0 {
		t.Fatalf("moved %d up, %d down; want 5, 0", up.Load(), down.Load())
	}
	p.Release()
	assertMapsEmpty(t, r)
	if n := r.Pairs(); n != 0 {
		t.Fatalf("%d pairs after Release", n)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	harness.Eventually(t, 5*time.Second, what, cond)
}
