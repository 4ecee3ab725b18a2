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

// loopListener is one loop's own listening socket for a route. Every
// route listens with SO_REUSEPORT, once per loop: the kernel spreads new
// connections over the loops by a hash of their addresses, and the loop
// that accepts a connection owns it, so no connection is handed between
// threads. (One socket shared by every loop's epoll would wake whichever
// loop came first, and a burst of connections would all land on it.)
type loopListener struct {
	rs      *routeServer
	fd      int // -1 once closed
	n       int32
	resume  time.Time     // while backing off after an accept error
	backoff time.Duration // the last backoff, doubled on each error
}

// reusePort is the route listener's net.ListenConfig.Control.
func reusePort(_, _ string, rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return os.NewSyscallError("setsockopt SO_REUSEPORT", serr)
}

// addListener gives the loop its socket for rs: the first loop a duplicate
// of the route's listener, the others a socket of their own bound to the
// same address. It runs before the loop starts.
func (l *loop) addListener(rs *routeServer, first bool) error {
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
	if err := rc.Control(func(fd uintptr) {
		if first {
			dfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
			derr = os.NewSyscallError("fcntl", derr)
			return
		}
		dfd, derr = listenLike(int(fd))
	}); err != nil {
		return fmt.Errorf("route %q: listener: %w", rs.Name, err)
	}
	if derr != nil {
		return fmt.Errorf("route %q: listener for an event loop: %w", rs.Name, derr)
	}
	li := &loopListener{rs: rs, fd: dfd, n: int32(len(l.listeners))}
	l.listeners = append(l.listeners, li)
	return l.listen(li)
}

// listenBacklog is what listen(2) asks for; the kernel caps it at
// net.core.somaxconn, as it does Go's own.
const listenBacklog = 4096

// listenLike opens a listening socket with fd's family, address and
// dual-stack setting, sharing its port through SO_REUSEPORT.
func listenLike(fd int) (int, error) {
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return -1, os.NewSyscallError("getsockopt SO_DOMAIN", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return -1, os.NewSyscallError("getsockname", err)
	}
	nfd, err := syscall.Socket(domain, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	opts := [][2]int{{unix.SOL_SOCKET, unix.SO_REUSEADDR}, {unix.SOL_SOCKET, unix.SO_REUSEPORT}}
	if domain == unix.AF_INET6 {
		v6only, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY)
		if err != nil {
			_ = unix.Close(nfd)
			return -1, os.NewSyscallError("getsockopt IPV6_V6ONLY", err)
		}
		if err := unix.SetsockoptInt(nfd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v6only); err != nil {
			_ = unix.Close(nfd)
			return -1, os.NewSyscallError("setsockopt IPV6_V6ONLY", err)
		}
	}
	for _, o := range opts {
		if err := unix.SetsockoptInt(nfd, o[0], o[1], 1); err != nil {
			_ = unix.Close(nfd)
			return -1, os.NewSyscallError("setsockopt", err)
		}
	}
	if err := syscall.Bind(nfd, sa); err != nil {
		_ = unix.Close(nfd)
		return -1, os.NewSyscallError("bind", err)
	}
	if err := syscall.Listen(nfd, listenBacklog); err != nil {
		_ = unix.Close(nfd)
		return -1, os.NewSyscallError("listen", err)
	}
	return nfd, nil
}

// listen registers li with the loop's epoll; a backoff removes it and
// listen adds it again.
func (l *loop) listen(li *loopListener) error {
	if li.fd < 0 {
		return nil
	}
	if err := l.ctl(unix.EPOLL_CTL_ADD, li.fd, unix.EPOLLIN, evListener, li.n); err != nil {
		l.srv.log.Error("event loop: listener registration failed", "route", li.rs.Name, "err", err)
		return fmt.Errorf("route %q: %w", li.rs.Name, err)
	}
	return nil
}

// closeListeners closes the loop's listening sockets; with the route's own
// listener closed, the kernel then refuses new connections (and resets
// those still queued on a closed socket).
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
