package proxy

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

// smallBuf is the user-space buffer of one read. A read that fills it marks
// its direction as bulk.
const smallBuf = 16 << 10

// pipeSize is the pipe capacity asked for once a direction splices: larger
// pipes mean fewer splice calls per megabyte.
const pipeSize = 1 << 20

// spliceFlags: never block inside the kernel (the loop waits), and move
// pages rather than copy where the kernel can.
const spliceFlags = unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK

// bufPool holds the user-space buffers. A flow takes one only once its
// source is readable and returns it once its bytes are written, so an idle
// connection holds no buffer at all.
var bufPool = sync.Pool{New: func() any { b := make([]byte, smallBuf); return &b }}

// flow is one direction of a loopConn: the bytes read from one socket that
// the other has not taken yet, and what the loop knows of both sockets.
//
// A flow starts with a pooled user-space buffer, the
// cheapest path for requests and responses, and switches to splice through
// a pipe of its own once a read fills the buffer (the direction is bulk),
// after HAProxy's splice-auto. Backpressure is the same in both modes:
// while the destination holds bytes back, nothing more is read.
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
	rdhup    bool // half-close, error or urgent data seen: trust no short read
	eof      bool // the source reached EOF
	shut     bool // EOF passed on: the destination is half-closed

	moved int64 // payload bytes delivered to the destination
}

func (f *flow) pending() bool { return f.n > f.off || f.inPipe > 0 }

// take gives the flow a buffer from the pool.
func (f *flow) take() {
	if f.buf == nil {
		f.buf = bufPool.Get().(*[]byte)
	}
}

// releaseBuf returns the buffer to the pool.
func (f *flow) releaseBuf() {
	if f.buf != nil {
		bufPool.Put(f.buf)
		f.buf = nil
	}
	f.off, f.n, f.skip = 0, 0, 0
}

// release returns the buffer and closes the pipe.
func (f *flow) release() {
	f.releaseBuf()
	if f.hasPipe {
		_ = unix.Close(f.pipe[0])
		_ = unix.Close(f.pipe[1])
		f.hasPipe = false
		f.inPipe = 0
	}
}

// pump moves flow d's bytes until a socket would block, EOF is passed on,
// or the connection ends.
func (c *loopConn) pump(d int) {
	f := &c.flows[d]
	for !c.closed {
		switch {
		case f.pending():
			if !f.writable || !c.flush(d) {
				return
			}
		case f.eof:
			if !f.shut {
				c.shutWrite(d)
			}
			return
		case !f.readable:
			return
		default:
			if !c.fill(d) {
				return
			}
		}
	}
}

// fill reads from flow d's source into its buffer (after what is already
// there, such as the header) or its pipe, and reports whether pump should
// go on.
//
// A read that returns less than it asked for took everything the socket
// held, so the flow waits for the next edge-triggered event instead of
// paying a read that returns EAGAIN; the kernel signals every arrival, and
// one after this read starts a new event. That does not hold once the
// peer's FIN has been signalled (the event that said so is spent), so
// after EPOLLRDHUP the flow reads on until EOF.
func (c *loopConn) fill(d int) bool {
	f := &c.flows[d]
	src := c.fd[d]
	if f.bulk && !f.noPipe && f.n == f.off {
		return c.fillPipe(d)
	}
	f.take()
	b := *f.buf
	if f.n == f.off {
		f.off, f.n = 0, 0
	}
	want := len(b) - f.n
	n, err := recv(src, b[f.n:])
	for errors.Is(err, unix.EINTR) {
		n, err = recv(src, b[f.n:])
	}
	if more, data := c.took(d, n, err); !data {
		if !f.pending() {
			f.releaseBuf()
		}
		return more
	}
	f.n += n
	if n == want {
		f.bulk = true
	} else if !f.rdhup {
		f.readable = false
	}
	return true
}

// fillPipe is fill for a bulk flow: splice from the source into the pipe.
func (c *loopConn) fillPipe(d int) bool {
	f := &c.flows[d]
	f.releaseBuf()
	if !f.hasPipe {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			f.noPipe = true // EMFILE: user space still works
			return true
		}
		// Best effort: the default 64 KiB pipe works too, with more calls.
		_, _ = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, pipeSize)
		f.pipe, f.hasPipe = p, true
	}
	n, err := unix.Splice(c.fd[d], nil, f.pipe[1], nil, pipeSize, spliceFlags)
	for errors.Is(err, unix.EINTR) {
		n, err = unix.Splice(c.fd[d], nil, f.pipe[1], nil, pipeSize, spliceFlags)
	}
	if more, data := c.took(d, int(n), err); !data {
		return more
	}
	f.inPipe = int(n)
	return true
}

// took books what a read or splice from flow d's source returned: EAGAIN,
// an error, EOF, or data. It reports whether pump should go on, and
// whether there is data.
func (c *loopConn) took(d, n int, err error) (more, data bool) {
	f := &c.flows[d]
	switch {
	case errors.Is(err, unix.EAGAIN):
		f.readable = false
		return false, false
	case err != nil:
		c.finish(closedError)
		return false, false
	case n == 0:
		f.eof = true
		return true, false
	}
	return true, true
}

// flush writes flow d's pending bytes to its destination and reports
// whether pump should go on.
func (c *loopConn) flush(d int) bool {
	f := &c.flows[d]
	dst := c.fd[1-d]
	var w int
	var err error
	if f.inPipe > 0 {
		var m int64
		m, err = unix.Splice(f.pipe[0], nil, dst, nil, f.inPipe, spliceFlags)
		w = int(m)
	} else {
		w, err = send(dst, (*f.buf)[f.off:f.n])
	}
	switch {
	case errors.Is(err, unix.EAGAIN):
		f.writable = false
		return false
	case errors.Is(err, unix.EINTR):
		return true
	case err != nil:
		c.writeFailed(d)
		return false
	}
	if f.inPipe > 0 {
		f.inPipe -= w
	} else {
		f.off += w
		if k := min(f.skip, w); k > 0 {
			f.skip -= k
			w -= k
		}
		if f.off == f.n && (f.bulk || !f.readable) {
			f.releaseBuf() // an idle connection holds no buffer
		}
	}
	f.moved += int64(w)
	return true
}

// endReason is why a connection whose flows have both ended closes.
func (c *loopConn) endReason() string {
	if c.failed {
		return closedError
	}
	return closedEOF
}

// writeFailed ends flow d, whose destination failed (a reset): its
// pending bytes can go nowhere. The failed socket may still hold what its
// peer sent before the reset, a response ahead of the RST, so the other
// flow reads it to the end and delivers it before the connection closes
// (as closedError). A read error, by contrast, ends the connection at
// once (took): the flow that read the socket had delivered everything
// before it read again, and the other flow writes to the failed socket.
func (c *loopConn) writeFailed(d int) {
	f := &c.flows[d]
	c.failed = true
	f.release()
	f.eof, f.shut = true, true
	o := &c.flows[1-d]
	if o.shut {
		c.finish(closedError)
		return
	}
	o.readable, o.rdhup = true, true
	c.pump(1 - d)
}

// shutWrite passes flow d's EOF on as a half-close of its destination, so
// a client that half-closes still gets its response; once both flows have
// done so the connection is complete.
func (c *loopConn) shutWrite(d int) {
	f := &c.flows[d]
	f.shut = true
	f.release()
	if c.flows[1-d].shut {
		// Both sources are at EOF, so nothing is left unread: close sends
		// the FIN the half-close would have.
		c.finish(c.endReason())
		return
	}
	if err := unix.Shutdown(c.fd[1-d], unix.SHUT_WR); err != nil {
		c.finish(closedError)
	}
}
