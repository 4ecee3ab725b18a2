package sockmap

import (
	"io"
	"testing"
	"time"
)

func TestSpliceIdleTimeoutClosesSilentPair(t *testing.T) {
	r := openRelay(t)
	c := connect(t, nil)
	p := c.splice(t, r, 300*time.Millisecond)
	if _, err := c.client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	expectRead(t, c.server, "x")
	start := time.Now()
	res := waitResult(t, p, 5*time.Second)
	if res.Reason != ReasonIdle {
		t.Fatalf("reason %q, want %q", res.Reason, ReasonIdle)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("ended after %s, before the 300ms idle timeout", d)
	}
	expectClosed(t, c.client)
	expectClosed(t, c.server)
}

// TestSpliceIdleTimeoutSparesOneWayTraffic: idle means no byte in either
// direction, so a client that only sends is not cut off.
func TestSpliceIdleTimeoutSparesOneWayTraffic(t *testing.T) {
	r := openRelay(t)
	c := connect(t, nil)
	// Generous margins: the machine is shared, and a stall longer than the
	// idle timeout minus the write gap would be real idleness.
	p := c.splice(t, r, time.Second)
	received := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(io.Discard, c.server)
		received <- n
	}()
	for range 25 { // 2.5 s, well past the idle timeout
		if _, err := c.client.Write([]byte("x")); err != nil {
			t.Fatalf("write: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = c.client.CloseWrite()
	select {
	case n := <-received:
		if n != 25 {
			t.Fatalf("upstream got %d bytes, want 25", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("upstream never saw EOF")
	}
	_ = c.server.CloseWrite()
	if res := waitResult(t, p, 5*time.Second); res.Reason != ReasonEOF {
		t.Fatalf("reason %q, want %q", res.Reason, ReasonEOF)
	}
}

// TestSpliceIdleTimeoutWhenPeerStopsReading: the upstream floods a client
// that never reads; once the buffers fill nothing moves, and the idle
// timeout must still end the pair. Only with flow control on: without it
// the kernel keeps taking the flood into its redirect queue (flow.go), the
// counters keep moving and the pair never looks idle.
func TestSpliceIdleTimeoutWhenPeerStopsReading(t *testing.T) {
	openRelay(t) // skip unless supported
	r, err := Open(Options{MaxPairs: 16, MaxQueued: flowTestMaxQueued})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	c := connect(t, nil)
	p := c.splice(t, r, 300*time.Millisecond)
	go func() { _, _ = io.Copy(c.server, zeros{}) }()
	_ = c.client.CloseWrite()
	if res := waitResult(t, p, 10*time.Second); res.Reason != ReasonIdle {
		t.Fatalf("reason %q, want %q", res.Reason, ReasonIdle)
	}
	expectClosed(t, c.client)
}

// zeros is an endless stream of zero bytes, cheap enough to fill any buffer.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
