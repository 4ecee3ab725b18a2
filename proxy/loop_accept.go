package proxy

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// acceptBatch bounds the connections one listener event accepts, so a
// flood of SYNs cannot starve the connections the loop already relays.
const acceptBatch = 64

// loopListener is one loop's copy of a route's listening socket. Each loop
// holds a duplicate descriptor registered with EPOLLEXCLUSIVE: the kernel
// wakes one loop per new connection, and the loop that accepts it owns it,
// so no connection is handed between threads.
type loopListener struct {
	rs      *routeServer
	fd      int // -1 once closed
	n       int32
	resume  time.Time     // while backing off after an accept error
	backoff time.Duration // the last backoff, doubled on each error
}

// addListener duplicates rs's listening socket for this loop and registers
// it. It runs before the loop starts.
func (l *loop) addListener(rs *routeServer) error {
	tl, ok := rs.ln.(*net.TCPListener)
	if !ok {
		return fmt.Errorf("route %q: listener is %T, not TCP", rs.Name, rs.ln)
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return fmt.Errorf("route %q: listener: %w", rs.Name, err)
	}
	dfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) { dfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return fmt.Errorf("route %q: listener: %w", rs.Name, err)
	}
	if derr != nil {
		return fmt.Errorf("route %q: duplicate listener: %w", rs.Name, os.NewSyscallError("fcntl", derr))
	}
	li := &loopListener{rs: rs, fd: dfd, n: int32(len(l.listeners))}
	l.listeners = append(l.listeners, li)
	return l.listen(li)
}

// listen registers li with the loop's epoll. EPOLLEXCLUSIVE is only
// accepted by EPOLL_CTL_ADD, so a backoff removes the listener and listen
// adds it again.
func (l *loop) listen(li *loopListener) error {
	if li.fd < 0 {
		return nil
	}
	if err := l.ctl(unix.EPOLL_CTL_ADD, li.fd, unix.EPOLLIN|unix.EPOLLEXCLUSIVE, evListener, li.n); err != nil {
		l.srv.log.Error("event loop: listener registration failed", "route", li.rs.Name, "err", err)
		return fmt.Errorf("route %q: %w", li.rs.Name, err)
	}
	return nil
}

// closeListeners closes the loop's listener copies; with the route's own
// listener closed, the kernel then refuses new connections.
func (l *loop) closeListeners() {
	for _, li := range l.listeners {
		if li.fd >= 0 {
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
		fd, sa, err := syscall.Accept4(li.fd, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		switch {
		case err == nil:
			li.backoff = 0
			l.admit(li.rs, fd, sa)
		case errors.Is(err, unix.EAGAIN):
			return
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.ECONNABORTED):
		default:
			li.backoff = min(max(2*li.backoff, 5*time.Millisecond), time.Second)
			l.srv.log.Error("accept failed; backing off", "route", li.rs.Name, "err", os.NewSyscallError("accept4", err), "backoff", li.backoff)
			_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, li.fd, nil)
			li.resume = l.now.Add(li.backoff)
			return
		}
	}
}

// admit applies the shutdown gate and the connection cap to an accepted
// socket, then starts its connection.
func (l *loop) admit(rs *routeServer, fd int, sa syscall.Sockaddr) {
	s := l.srv
	rs.metrics.accepted.Inc()
	client := sockaddrAddrPort(sa)
	if reason := s.gate(); reason != "" {
		rs.metrics.refuse(reason)
		if reason == refusedCap {
			s.log.Debug("connection over cap refused", "route", rs.Name, "client", client.String(), "max_conns", s.cfg.MaxConns)
		}
		resetCloseFD(fd)
		return
	}
	rs.metrics.active.Inc()
	newLoopConn(l, rs, fd, client).start()
}

// resetCloseFD closes with an RST so a refused client fails fast with
// "connection reset" instead of reading a clean EOF it could mistake for an
// empty response; it also leaves no TIME_WAIT behind on the proxy.
func resetCloseFD(fd int) {
	_ = unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	_ = unix.Close(fd)
}
