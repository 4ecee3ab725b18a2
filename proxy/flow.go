package proxy

import (
	"sync"

	"golang.org/x/sys/unix"

	"github.com/coredns-hairpin/hairpin/proxy/internal/rawsock"
)

// smallBuf is the user-space buffer of one read. A read that fills it marks
// its direction as bulk.
const smallBuf = 16 << 10

// pipeSize is the pipe capacity asked for once a direction splices: larger
// pipes mean fewer splice calls per megabyte.
const pipeSize = 1 << 20

// bufPool holds the user-space buffers. A flow takes one only once its
// source is readable and returns it once its bytes are written, so an idle
// connection holds no buffer at all.
var bufPool = sync.Pool{New: func() any { b := make([]byte, smallBuf); return &b }}

// bufCache is one event loop's spare buffer, in front of bufPool. A loop
// moves one exchange at a time: the buffer that a write has just emptied
// is, nearly always, the one the next read takes, and passing it on here
// skips two sync.Pool calls per read (each pins the P). It holds one
// buffer at most, so a loop keeps no more than 16 KiB of them idle. Only
// the loop's goroutine touches it.
type bufCache struct{ spare *[]byte }

func (c *bufCache) get() *[]byte {
	if b := c.spare; b != nil {
		c.spare = nil
		return b
	}
	return bufPool.Get().(*[]byte)
}

func (c *bufCache) put(b *[]byte) {
	if c.spare == nil {
		c.spare = b
		return
	}
	bufPool.Put(b)
}

// flow is one direction of a relay: the bytes read from its source that its
// destination has not taken yet, and what the loop knows of both sockets.
//
// A flow starts with a pooled user-space buffer, the cheapest path for
// requests and responses, and switches to splice through a pipe of its own
// once a read fills the buffer (the direction is bulk), after HAProxy's
// splice-auto. Backpressure is the same in both modes: while the
// destination holds bytes back, nothing more is read.
type flow struct {
	buf    *[]byte // nil while nothing is pending
	off, n int     // buf[off:n] is still to be written
	skip   int     // leading bytes of buf that are the header, not payload

	pipe    [2]int // the splice pipe, once bulk
	hasPipe bool
	inPipe  int  // bytes in the pipe
	bulk    bool // a read filled the buffer: splice from now on
	noPipe  bool // the pipe could not be made: stay in user space

	readable bool // the source may hold bytes (or EOF) not yet read
	writable bool // the destination may take bytes
	fin      bool // the source's FIN is queued (EPOLLRDHUP)
	unsure   bool // urgent data, an error, a hangup or a failed write seen: trust no short read
	eof      bool // the source reached EOF
	shut     bool // EOF passed on: the destination is half-closed

	moved int64 // payload bytes delivered to the destination
}

func (f *flow) pending() bool { return f.n > f.off || f.inPipe > 0 }

// take gives the flow a buffer from c.
func (f *flow) take(c *bufCache) {
	if f.buf == nil {
		f.buf = c.get()
	}
}

// releaseBuf gives the buffer back to c.
func (f *flow) releaseBuf(c *bufCache) {
	if f.buf != nil {
		c.put(f.buf)
		f.buf = nil
	}
	f.off, f.n, f.skip = 0, 0, 0
}

// openPipe makes the flow's splice pipe; false if it cannot (EMFILE), and
// the flow then stays in user space.
func (f *flow) openPipe() bool {
	if f.hasPipe {
		return true
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		f.noPipe = true
		return false
	}
	// Best effort: the default 64 KiB pipe works too, with more calls.
	_, _ = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, pipeSize)
	f.pipe, f.hasPipe = p, true
	return true
}

// release gives the buffer back to c and closes the pipe.
func (f *flow) release(c *bufCache) {
	f.releaseBuf(c)
	if f.hasPipe {
		_ = rawsock.Close(f.pipe[0])
		_ = rawsock.Close(f.pipe[1])
		f.hasPipe = false
		f.inPipe = 0
	}
}
