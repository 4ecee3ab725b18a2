package proxy

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// The in-kernel relay in the event loop (--kernel-relay). Once the header
// is written, both sockets go into the BPF sockhash (sockmap.AttachFD) and
// the kernel moves every payload byte; the loop keeps the lifecycle. A
// kernel flow's socket signals only what the program leaves on it: EOF, or
// a stray segment (sockmap.Pair.AdoptStray). At EOF the flow waits until
// the other socket has taken every redirected byte (Flushed), polling every
// flushPoll, and then half-closes it as a user-space flow would. Byte
// counts and the idle clock read the program's counters at each tick.

// kernelEvents is the interest set of a socket in the kernel's hands: EOF
// and stray segments only.
const kernelEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET

// interest changes what both sockets signal. A socket whose registration
// fails cannot be watched: the connection ends.
func (c *loopConn) interest(events uint32) {
	for side, kind := range [2]int32{evClient, evUpstream} {
		if err := c.l.ctl(unix.EPOLL_CTL_MOD, c.fd[side], events, kind, c.slot); err != nil {
			c.finish(closedError)
			return
		}
	}
}

// flushPoll is how often a flow at EOF checks that the kernel has sent
// what it redirected; usually it has by the first check.
const flushPoll = 200 * time.Microsecond

// handOver writes the header alone and gives both sockets to the kernel.
// It reports false when the connection stays in user space: the header
// did not leave in one call, or the kernel refused the pair (a socket that
// already received a FIN cannot enter a sockhash), which is counted.
func (c *loopConn) handOver() bool {
	s := c.l.srv
	up := &c.flows[toUp]
	// Alone, without the client's first bytes: a read that takes part of
	// a queued segment leaves the rest of it with an offset the sockhash
	// handover does not honour, and the kernel then redirects the whole
	// segment, the bytes already sent included (the kernel suite's
	// TestLargeTransferBothWaysIsByteExact caught 16,340 duplicated bytes,
	// one early read's worth, in about one run in three).
	w, err := send(c.fd[sideUpstream], (*up.buf)[up.off:up.n])
	switch {
	case errors.Is(err, unix.EAGAIN), err == nil && w < up.n-up.off:
		up.off += max(w, 0)
		up.skip -= max(w, 0)
		s.metrics.kernelUserspace.Inc()
		return false
	case err != nil:
		c.finish(closedError)
		return true
	}
	up.releaseBuf()
	p, err := s.kernel.AttachFD(c.fd[sideClient], c.fd[sideUpstream])
	if err != nil {
		s.metrics.kernelUserspace.Inc()
		return false
	}
	c.pair = p
	c.flows[toUp].kernel, c.flows[toClient].kernel = true, true
	// The kernel's sends make each socket signal EPOLLOUT on every
	// acknowledgement; the loop writes nothing now, so it stops asking.
	c.interest(kernelEvents)
	c.pump(toUp)
	c.pump(toClient)
	return true
}

// pumpKernel is pump for a flow the kernel relays: it reads the source
// only to see EOF or a stray segment, and passes EOF on once flushed.
func (c *loopConn) pumpKernel(d int) {
	f := &c.flows[d]
	for !c.closed && !f.shut {
		if f.eof {
			ok, err := c.pair.Flushed(d)
			switch {
			case err != nil:
				c.finish(closedError)
			case !ok:
				c.l.flushing[c] = struct{}{}
			case c.failed:
				c.finish(closedError)
			default:
				c.shutWrite(d)
			}
			return
		}
		if !f.readable {
			return
		}
		f.take()
		n, err := recv(c.fd[d], *f.buf)
		for errors.Is(err, unix.EINTR) {
			n, err = recv(c.fd[d], *f.buf)
		}
		if err != nil && !errors.Is(err, unix.EAGAIN) {
			// The source failed, but what the kernel redirected from it
			// before may still be on its way: wait for it as for EOF,
			// then close, since the other flow writes to this socket.
			f.releaseBuf()
			f.eof, c.failed = true, true
			continue
		}
		if _, data := c.took(d, n, err); !data {
			f.releaseBuf()
			continue
		}
		// A stray segment: the direction goes over to user space, after
		// the kernel has sent what it redirected before (held below), or
		// the connection goes, as the bytes may be out of order already.
		if !c.pair.AdoptStray(d) {
			c.finish(closedError)
			return
		}
		f.n = n
		f.kernel, f.held, f.noPipe = false, true, true
		c.interest(connEvents)
		c.pump(d)
		return
	}
}

// heldBack reports whether flow d must not write yet: it was adopted from
// the kernel and the kernel has not sent all it redirected before.
func (c *loopConn) heldBack(d int) bool {
	f := &c.flows[d]
	if !f.held {
		return false
	}
	ok, err := c.pair.Flushed(d)
	switch {
	case err != nil:
		c.finish(closedError)
		return true
	case !ok:
		c.l.flushing[c] = struct{}{}
		return true
	}
	f.held = false
	return false
}

// kernelMoved is what the kernel relayed from flow d's source.
func (c *loopConn) kernelMoved(d int) int64 {
	if c.pair == nil {
		return 0
	}
	return int64(c.pair.Moved(d))
}
