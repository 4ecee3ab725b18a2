package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coredns-hairpin/hairpin/proxy/internal/evloop"
	"github.com/coredns-hairpin/hairpin/proxy/internal/rawsock"
)

// acceptBatch bounds the connections one listener event accepts, so a
// flood of SYNs cannot starve the connections the loop already relays.
const acceptBatch = 64

// loopListener is one loop's own listening socket for a route. Every
// route listens with SO_REUSEPORT, once per loop: the kernel spreads new
// connections over the loops by a hash of their addresses, and the loop
// that accepts a connection owns it, so no connection is handed between
// threads. (One socket shared by every loop's epoll would wake whichever
// loop came first, and a burst of connections would all land on it.)
type loopListener struct {
	l       *loop
	rs      *routeServer
	fd      int // -1 once closed
	reg     evloop.Reg
	resume  time.Time     // while backing off after an accept error
	backoff time.Duration // the last backoff, doubled on each error
}

// Event is a listener's readiness: connections are queued.
func (li *loopListener) Event(uint32) { li.l.accept(li) }

// addListener gives the loop its socket for rs: the first loop a duplicate
// of the route's listener (which makeLoops then closes), the others a
// socket of their own bound to the same address. It runs before the loop
// starts.
func (l *loop) addListener(rs *routeServer, first bool) error {
	tl, ok := rs.ln.(*net.TCPListener)
	if !ok {
		return fmt.Errorf("route %q: listener is %T, not TCP", rs.Name, rs.ln)
	}
	fd, err := rawsock.Listener(tl, !first)
	if err != nil {
		return fmt.Errorf("route %q: listener for an event loop: %w", rs.Name, err)
	}
	// accept(2)'s socket is a clone of the listener's, so TCP_NODELAY and
	// SO_KEEPALIVE set here reach every connection without a setsockopt
	// per accept (tcp_create_openreq_child also starts the clone's
	// keepalive timer).
	rawsock.SetOptions(fd, l.srv.keepalive())
	li := &loopListener{l: l, rs: rs, fd: fd}
	l.listeners = append(l.listeners, li)
	return l.listen(li)
}

// listen registers li with the loop's epoll. Level-triggered: an accept
// batch may leave connections queued, and the next wait reports them.
func (l *loop) listen(li *loopListener) error {
	if li.fd < 0 {
		return nil
	}
	reg, err := l.ev.Add(li.fd, unix.EPOLLIN, li)
	if err != nil {
		l.srv.log.Error("event loop: listener registration failed", "route", li.rs.Name, "err", err)
		return fmt.Errorf("route %q: %w", li.rs.Name, err)
	}
	li.reg = reg
	return nil
}

// closeListeners closes the loop's listening sockets; once every loop has,
// the kernel refuses new connections (and resets those still queued on a
// closed socket). Each is removed from the epoll set first: for the first
// loop's duplicate of the route's listener, closing alone would not
// (evloop.Loop.Remove).
func (l *loop) closeListeners() {
	for _, li := range l.listeners {
		if li.fd >= 0 {
			_ = l.ev.Remove(li.reg, li.fd)
			_ = unix.Close(li.fd)
			li.fd = -1
		}
	}
}

// accept takes what li's queue holds, up to acceptBatch. Errors other than
// a connection that was already gone (EMFILE above all) pause this listener
// with a doubling backoff, like net/http, instead of spinning on a
// level-triggered socket.
func (l *loop) accept(li *loopListener) {
	if li.fd < 0 || !li.resume.IsZero() {
		return
	}
	for range acceptBatch {
		fd, client, err := rawsock.Accept(li.fd)
		switch {
		case err == nil:
			li.backoff = 0
			l.admit(li.rs, fd, client)
		case errors.Is(err, unix.EAGAIN):
			return
		case errors.Is(err, unix.ECONNABORTED):
		default:
			li.backoff = min(max(2*li.backoff, 5*time.Millisecond), time.Second)
			l.srv.log.Error("accept failed; backing off", "route", li.rs.Name, "err", os.NewSyscallError("accept4", err), "backoff", li.backoff)
			_ = l.ev.Remove(li.reg, li.fd)
			li.resume = l.ev.Now().Add(li.backoff)
			return
		}
	}
}

// admit applies the shutdown gate and the connection cap to an accepted
// socket, then starts its connection.
func (l *loop) admit(rs *routeServer, fd int, client netip.AddrPort) {
	s := l.srv
	rs.metrics.accepted.Inc()
	if reason := s.gate(); reason != "" {
		rs.metrics.refuse(reason)
		if reason == refusedCap {
			s.log.Debug("connection over cap refused", "route", rs.Name, "client", client.String(), "max_conns", s.cfg.MaxConns)
		}
		rawsock.ResetClose(fd)
		return
	}
	rs.metrics.active.Inc()
	newLoopConn(l, rs, fd, client).start()
}
