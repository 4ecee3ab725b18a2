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
