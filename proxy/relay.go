package proxy

import (
	"golang.org/x/sys/unix"

	"github.com/coredns-hairpin/hairpin/proxy/internal/rawsock"
)

// relay moves a connection's bytes: its two sockets and the flow of each
// direction between them. It owns neither the sockets' registration nor
// their close; each of its steps returns the reason the connection must
// end (closedEOF or closedError), or "" while it goes on.
type relay struct {
	fd     [2]int    // by side; -1 once closed
	flows  [2]flow   // by direction
	bufs   *bufCache // the loop's, for the flows' buffers
	failed bool      // a write failed: the connection ends as closedError
}

// prime puts b (the PROXY header) ahead of everything the client sends:
// it waits in the upstream flow's buffer, and the client's first bytes
// join it there before it is written.
func (r *relay) prime(b []byte) {
	up := &r.flows[toUpstream]
	up.take(r.bufs)
	up.n = copy(*up.buf, b)
	up.skip = up.n
	r.flows[toClient].writable = true // the client socket is fresh
}

// mark books one epoll event of socket s, and returns the direction that
// reads it.
//
// After EPOLLHUP, EPOLLERR or EPOLLPRI a read can stop short with bytes
// still queued (at an error, at TCP's urgent mark), and the edge that said
// so is spent: from then on the flow reads until EAGAIN (unsure). After
// EPOLLRDHUP alone a short read is the end (fin; see fill).
func (r *relay) mark(s side, events uint32) dir {
	d := s.reader()
	if events&(unix.EPOLLIN|unix.EPOLLPRI|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		f := &r.flows[d]
		f.readable = true
		f.fin = f.fin || events&unix.EPOLLRDHUP != 0
		f.unsure = f.unsure || events&(unix.EPOLLPRI|unix.EPOLLHUP|unix.EPOLLERR) != 0
	}
	if events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		r.flows[d.other()].writable = true
	}
	return d
}

// event applies one epoll event of socket s and moves what it allows.
//
// An error (a reset, a keepalive timeout) is not acted on here: a reset
// socket still holds what its peer sent before the RST, and recv returns
// that before the error. The flow that reads the socket goes first, so
// those bytes reach the other side before anything fails.
func (r *relay) event(s side, events uint32) string {
	d := r.mark(s, events)
	if end := r.pump(d); end != "" {
		return end
	}
	return r.pump(d.other())
}

// pump moves direction d's bytes until a socket would block or EOF is
// passed on.
func (r *relay) pump(d dir) string {
	f := &r.flows[d]
	for {
		var more bool
		var end string
		switch {
		case f.pending():
			if !f.writable {
				return ""
			}
			more, end = r.flush(d)
		case f.eof:
			if !f.shut {
				return r.shutWrite(d)
			}
			return ""
		case !f.readable:
			return ""
		default:
			more, end = r.fill(d)
		}
		if end != "" || !more {
			return end
		}
	}
}

// fill reads from d's source into its buffer (after what is already there,
// such as the header) or its pipe, and reports whether pump should go on.
//
// A read that returns less than it asked for took everything the socket
// held, so the flow waits for the next edge-triggered event instead of
// paying a read that returns EAGAIN; epoll(7), EPOLLET: events are
// delivered "only when changes occur on the monitored file descriptor", and
// every arrival after this read is such a change. Once the peer's FIN has
// been signalled (EPOLLRDHUP, and the event that said so is spent) the same
// short read means EOF, and the read that would return 0 is skipped; but
// after urgent data, an error or a hangup a read can stop short of what is
// queued, so the flow then reads on until EOF.
func (r *relay) fill(d dir) (bool, string) {
	f := &r.flows[d]
	if f.bulk && !f.noPipe && f.n == f.off {
		return r.fillPipe(d)
	}
	f.take(r.bufs)
	b := *f.buf
	if f.n == f.off {
		f.off, f.n = 0, 0
	}
	want := len(b) - f.n
	n, err := rawsock.Recv(r.fd[d.src()], b[f.n:])
	if more, end, data := r.took(d, n, err); !data {
		if !f.pending() {
			f.releaseBuf(r.bufs)
		}
		return more, end
	}
	f.n += n
	switch {
	case n == want:
		f.bulk = true
	case f.unsure: // read on until EOF or EAGAIN
	case f.fin:
		// The FIN came in order, after every byte before it, and nothing
		// can follow it: a short read took the last byte.
		f.eof, f.readable = true, false
	default:
		f.readable = false
	}
	return true, ""
}

// fillPipe is fill for a bulk flow: splice from the source into the pipe.
func (r *relay) fillPipe(d dir) (bool, string) {
	f := &r.flows[d]
	f.releaseBuf(r.bufs)
	if !f.openPipe() {
		return true, "" // user space still works
	}
	n, err := rawsock.Splice(r.fd[d.src()], f.pipe[1], pipeSize)
	if more, end, data := r.took(d, n, err); !data {
		return more, end
	}
	f.inPipe = n
	return true, ""
}

// took books what a read or splice from d's source returned: EAGAIN, an
// error, EOF, or data. It reports whether pump should go on, why the
// connection ends, and whether there is data.
//
// A read error ends the connection at once: the flow that read the socket
// had delivered everything before it read again, and the other flow writes
// to the failed socket.
func (r *relay) took(d dir, n int, err error) (more bool, end string, data bool) {
	f := &r.flows[d]
	switch {
	case rawsock.Again(err):
		f.readable = false
		return false, "", false
	case err != nil:
		return false, closedError, false
	case n == 0:
		f.eof = true
		return true, "", false
	}
	return true, "", true
}

// flush writes d's pending bytes to its destination and reports whether
// pump should go on.
func (r *relay) flush(d dir) (bool, string) {
	f := &r.flows[d]
	dst := r.fd[d.dst()]
	var w int
	var err error
	if f.inPipe > 0 {
		w, err = rawsock.Splice(f.pipe[0], dst, f.inPipe)
	} else if f.eof {
		// shutWrite follows once these bytes are out, and its FIN (or the
		// close's) pushes them with it.
		w, err = rawsock.SendLast(dst, (*f.buf)[f.off:f.n])
	} else {
		w, err = rawsock.Send(dst, (*f.buf)[f.off:f.n])
	}
	switch {
	case rawsock.Again(err):
		f.writable = false
		return false, ""
	case err != nil:
		return false, r.writeFailed(d)
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
			f.releaseBuf(r.bufs) // an idle connection holds no buffer
		}
	}
	f.moved += int64(w)
	return true, ""
}

// writeFailed ends direction d, whose destination failed (a reset): its
// pending bytes can go nowhere. The failed socket may still hold what its
// peer sent before the reset, a response ahead of the RST, so the other
// direction reads it to the end and delivers it before the connection
// closes (as closedError).
func (r *relay) writeFailed(d dir) string {
	f := &r.flows[d]
	r.failed = true
	f.release(r.bufs)
	f.eof, f.shut = true, true
	o := &r.flows[d.other()]
	if o.shut {
		return closedError
	}
	o.readable, o.unsure = true, true
	return r.pump(d.other())
}

// shutWrite passes d's EOF on as a half-close of its destination, so a
// client that half-closes still gets its response; once both directions
// have done so the connection is complete.
func (r *relay) shutWrite(d dir) string {
	f := &r.flows[d]
	f.shut = true
	f.release(r.bufs)
	if r.flows[d.other()].shut {
		// Both sources are at EOF, so nothing is left unread: close sends
		// the FIN the half-close would have.
		if r.failed {
			return closedError
		}
		return closedEOF
	}
	if err := rawsock.Shutdown(r.fd[d.dst()]); err != nil {
		return closedError
	}
	return ""
}

// release frees both flows' buffers and pipes; the sockets are the owner's.
func (r *relay) release() {
	for d := range r.flows {
		r.flows[d].release(r.bufs)
	}
}
