package sockmap

import (
	"bytes"
	"io"
	"sync/atomic"
	"testing"
	"time"
)

// flowTestMaxQueued is the queue bound of the flow-control tests.
const flowTestMaxQueued = 4 << 20

// countingWriter counts what was written through it.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// TestSpliceBoundsWhatTheKernelQueuesForAStalledReader: the upstream sends
// 512 MiB to a client that reads nothing for two seconds. Redirected bytes
// wait in the kernel without closing the sender's window, so without flow
// control the upstream would get all of it out at once; with it, the
// upstream is held back to socket buffers plus the queue bound. Then the
// client reads everything, byte-exact, and the pair reports the direction
// as relayed in userspace.
func TestSpliceBoundsWhatTheKernelQueuesForAStalledReader(t *testing.T) {
	openRelay(t) // skip unless supported
	r, err := Open(Options{MaxPairs: 16, MaxQueued: flowTestMaxQueued})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	const total = 512 << 20
	// Socket buffers on the way (tcp_rmem[2] here is 32 MiB, and the
	// handover raises the receive buffer to it) plus MaxQueued and
	// one FlowInterval of loopback traffic stay far below this.
	const bound = 192 << 20
	c := connect(t, nil)
	p := c.splice(t, r, 0)
	_ = c.client.CloseWrite()
	sent := &countingWriter{w: c.server}
	go func() {
		if _, err := io.Copy(sent, stream(4, total)); err == nil {
			_ = c.server.CloseWrite()
		}
	}()
	time.Sleep(2 * time.Second)
	if n := sent.n.Load(); n > bound {
		t.Fatalf("upstream got %d MiB out to a client that reads nothing; want at most %d MiB", n>>20, bound>>20)
	}
	sum, n, err := digest(c.client)
	want, _, _ := digest(stream(4, total))
	if err != nil || n != total || !bytes.Equal(sum, want) {
		t.Fatalf("client got %d bytes (%v), digest match %v; want %d", n, err, bytes.Equal(sum, want), total)
	}
	res := waitResult(t, p, 5*time.Second)
	if res.Reason != ReasonEOF || res.ToClient != total || !res.Held[1] {
		t.Fatalf("result %+v, want eof, %d bytes to the client, upstream's direction held", res, total)
	}
}
