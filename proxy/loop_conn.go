package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// Sides of a loopConn: fd[client] is the accepted socket, fd[upstream]
// the dialled one. Flow d reads from fd[d] and writes to fd[1-d]: toUp
// (0) reads the client, toClient (1) reads the upstream.
const (
	sideClient = iota
	sideUpstream
)

// Flows, by the side they read.
const (
	toUp     = sideClient
	toClient = sideUpstream
)

// loopConn is one connection owned by a loop, from accept to close. Only
// the loop's goroutine touches it.
type loopConn struct {
	l        *loop
	rs       *routeServer
	slot     int32
	fd       [2]int // -1 once closed
	client   netip.AddrPort
	accepted time.Time

	relaying     bool           // the header is queued and both flows run
	target       netip.AddrPort // what connect dials, for upstreamName.drop
	dialStart    time.Time      // for the dial duration metric
	dialDeadline time.Time      // in-loop connect only
	cancelDial   context.CancelFunc

	flows     [2]flow
	published [2]int64 // bytes the metrics have seen, per flow
	lastMove  time.Time
	closed    bool
	failed    bool // a write failed: the connection ends as closedError
}

func newLoopConn(l *loop, rs *routeServer, fd int, client netip.AddrPort) *loopConn {
	return &loopConn{l: l, rs: rs, fd: [2]int{fd, -1}, client: client, accepted: l.now}
}

// start builds the header, registers the client socket and begins the
// upstream dial: in the loop when the route has an address for it
// (routeServer.loopAddr), else on a goroutine through the Server's
// DialFunc.
func (c *loopConn) start() {
	s := c.l.srv
	m := c.rs.metrics
	fd := c.fd[sideClient]
	setSockOpts(fd)
	hdr, err := c.header(fd)
	if err != nil {
		m.refuse(refusedHeader)
		s.log.Warn("connection refused: no valid PROXY header", "route", c.rs.Name, "err", err)
		resetCloseFD(fd)
		s.releaseSlot(c.rs)
		return
	}
	c.l.addSlot(c)
	if err := c.l.ctl(unix.EPOLL_CTL_ADD, fd, connEvents, evClient, c.slot); err != nil {
		c.end(true)
		return
	}
	// The header waits in the upstream flow's buffer; the client's first
	// bytes join it there before it is written (see connected).
	up := &c.flows[toUp]
	up.take()
	up.n = copy(*up.buf, hdr)
	up.skip = up.n
	c.flows[toClient].writable = true
	c.dialStart = time.Now()
	if ap, ok := c.rs.loopAddr(c.l.now); ok {
		c.connect(ap)
		return
	}
	c.dialExternal()
}

// header formats the PROXY header for the client socket fd.
func (c *loopConn) header(fd int) ([]byte, error) {
	lsa, err := syscall.Getsockname(fd)
	if err != nil {
		return nil, os.NewSyscallError("getsockname", err)
	}
	h, err := buildHeader(c.l.srv.cfg.ProxyProtocol, c.client, sockaddrAddrPort(lsa), c.rs.DestAddr, c.rs.HeaderPort)
	if err != nil {
		return nil, err
	}
	b, err := h.Format()
	if err != nil {
		return nil, fmt.Errorf("format PROXY header: %w", err)
	}
	return b, nil
}

// setSockOpts sets what Go sets on its own TCP sockets: no Nagle delay (a
// relay writes each read at once), and keepalive with the kernel's timers.
func setSockOpts(fd int) {
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
}

// connect dials ap without blocking; the socket's first EPOLLOUT (or
// EPOLLERR) ends the dial, in connectDone.
func (c *loopConn) connect(ap netip.AddrPort) {
	c.target = ap
	family, sa := addrPortSockaddr(ap)
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		c.dialFailed(c.dialError(os.NewSyscallError("socket", err)))
		return
	}
	c.fd[sideUpstream] = fd
	setSockOpts(fd)
	if err := c.l.ctl(unix.EPOLL_CTL_ADD, fd, connEvents, evUpstream, c.slot); err != nil {
		c.dialFailed(c.dialError(err))
		return
	}
	switch err := syscall.Connect(fd, sa); err {
	case nil:
		c.connected()
	case syscall.EINPROGRESS, syscall.EINTR:
		c.dialDeadline = c.dialStart.Add(c.l.srv.cfg.DialTimeout)
		c.l.dialing[c] = struct{}{}
	default:
		c.dialFailed(c.dialError(os.NewSyscallError("connect", err)))
	}
}

// connectDone reads the outcome of an in-loop connect.
func (c *loopConn) connectDone(events uint32) {
	if _, ok := c.l.dialing[c]; !ok {
		return
	}
	errno, err := unix.GetsockoptInt(c.fd[sideUpstream], unix.SOL_SOCKET, unix.SO_ERROR)
	switch {
	case err != nil:
		c.dialFailed(c.dialError(os.NewSyscallError("getsockopt", err)))
	case errno != 0:
		c.dialFailed(c.dialError(os.NewSyscallError("connect", unix.Errno(errno))))
	case events&unix.EPOLLOUT != 0:
		c.connected()
	}
}

func (c *loopConn) dialTimedOut() {
	c.dialFailed(c.dialError(os.ErrDeadlineExceeded))
}

// dialError names the upstream, as net.Dial's errors do.
func (c *loopConn) dialError(err error) error {
	return fmt.Errorf("dial %s: %w", c.rs.Upstream, err)
}

// dialExternal runs the Server's DialFunc on a goroutine (name resolution
// may block) and brings the connected socket into the loop.
func (c *loopConn) dialExternal() {
	s := c.l.srv
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.DialTimeout)
	c.cancelDial = cancel
	l, upstream, name := c.l, c.rs.Upstream, c.rs.name
	go func() {
		fd := -1
		conn, err := s.dial(ctx, "tcp", upstream)
		if err == nil {
			if name != nil {
				name.seed(conn.RemoteAddr())
			}
			fd, err = detachFD(conn)
		}
		if err != nil {
			err = fmt.Errorf("dial %s: %w", upstream, err)
		}
		if !l.post(func() { c.dialedExternal(fd, err) }) && fd >= 0 {
			_ = unix.Close(fd) // the loop is gone, and the connection with it
		}
	}()
}

func (c *loopConn) dialedExternal(fd int, err error) {
	if c.closed {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
		return
	}
	c.cancelDial()
	c.cancelDial = nil
	if err != nil {
		c.dialFailed(err)
		return
	}
	c.fd[sideUpstream] = fd
	if err := c.l.ctl(unix.EPOLL_CTL_ADD, fd, connEvents, evUpstream, c.slot); err != nil {
		c.dialFailed(err)
		return
	}
	c.connected()
}

// detachFD takes the socket out of a net.Conn (the runtime poller) for the
// loop's epoll: a duplicate descriptor, then the original is closed.
func detachFD(conn net.Conn) (int, error) {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		_ = conn.Close()
		return -1, fmt.Errorf("upstream dialer returned %T, not a TCP connection", conn)
	}
	defer tc.Close()
	rc, err := tc.SyscallConn()
	if err != nil {
		return -1, err
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) { nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, os.NewSyscallError("fcntl", derr)
	}
	return nfd, nil
}

// dialFailed books a failed dial and refuses the client with a reset.
func (c *loopConn) dialFailed(err error) {
	s := c.l.srv
	m := c.rs.metrics
	delete(c.l.dialing, c)
	if c.rs.name != nil && c.target.IsValid() {
		c.rs.name.drop(c.target)
	}
	m.dialDuration.Observe(time.Since(c.dialStart).Seconds())
	cause := classifyDialError(err)
	m.dialError(cause)
	m.refuse(refusedDial)
	s.dialLog.record(c.rs.Name, c.rs.Upstream, cause, err)
	s.log.Debug("upstream dial failed", "route", c.rs.Name, "client", c.client.String(), "cause", cause, "err", err)
	c.end(true)
}

// connected starts the relay: the header leaves together with whatever the
// client has sent so far (HTTP and TLS clients speak first), in one
// segment; that saves a write here and a read and wake-up in the upstream.
// It never waits for client bytes, so server-first protocols work too.
func (c *loopConn) connected() {
	delete(c.l.dialing, c)
	c.rs.metrics.dialDuration.Observe(time.Since(c.dialStart).Seconds())
	c.relaying = true
	c.lastMove = c.l.now
	up := &c.flows[toUp]
	up.writable = true
	if up.readable && !c.fill(toUp) {
		return
	}
	c.pump(toUp)
	c.pump(toClient)
}

// event applies one epoll event for one of c's sockets.
func (c *loopConn) event(upstream bool, events uint32) {
	side := sideClient
	if upstream {
		side = sideUpstream
	}
	if c.closed || c.fd[side] < 0 {
		return
	}
	if upstream && !c.relaying {
		if c.cancelDial != nil {
			return
		}
		// The event that completes the connect may also say the upstream
		// already wrote (a server-first protocol): it is applied below, as
		// edge-triggered readiness is reported only once.
		c.connectDone(events)
		if !c.relaying || c.closed {
			return
		}
	}
	if events&(unix.EPOLLIN|unix.EPOLLPRI|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		f := &c.flows[side] // the flow that reads this socket
		f.readable = true
		// After these a read can stop short with bytes still queued (at
		// EOF, at an error, at TCP's urgent mark), and the edge that said
		// so is spent: from then on the flow reads until EAGAIN.
		if events&(unix.EPOLLPRI|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			f.rdhup = true
		}
	}
	if events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		c.flows[1-side].writable = true // the flow that writes it
	}
	if !c.relaying {
		return
	}
	// An error (a reset, a keepalive timeout) is not acted on here: a
	// reset socket still holds what its peer sent before the RST, and recv
	// returns that before the error. The flow that reads the socket goes
	// first, so those bytes reach the other side before anything fails.
	c.pump(side)
	c.pump(1 - side)
}

// onTick publishes the bytes moved since the last tick and enforces the
// idle timeout, as relay.onTick does for the goroutine relay.
func (c *loopConn) onTick(now time.Time) {
	if c.closed || !c.relaying {
		return
	}
	if c.publish() {
		c.lastMove = now
	}
	if idle := c.l.srv.cfg.IdleTimeout; idle > 0 && now.Sub(c.lastMove) >= idle {
		c.finish(closedIdle)
	}
}

// publish hands the bytes moved since the last call to the metrics and
// reports whether any moved.
func (c *loopConn) publish() bool {
	any := false
	sinks := [2]prometheus.Counter{c.rs.metrics.bytesToUp, c.rs.metrics.bytesToCli}
	for d := range c.flows {
		if n := c.flows[d].moved; n != c.published[d] {
			sinks[d].Add(float64(n - c.published[d]))
			c.published[d] = n
			any = true
		}
	}
	return any
}

// finish ends c with reason: the close is booked, then everything is freed.
// A connection still dialling (aborted by the drain deadline) is reset.
func (c *loopConn) finish(reason string) {
	if c.closed {
		return
	}
	m := c.rs.metrics
	c.publish()
	m.close(reason)
	if c.relaying {
		m.connDuration.Observe(time.Since(c.accepted).Seconds())
		// Guarded: the arguments would be built for every connection even
		// when debug logging is off.
		if log := c.l.srv.log; log.Enabled(context.Background(), slog.LevelDebug) {
			log.Debug("connection closed", "route", c.rs.Name, "client", c.client.String(),
				"reason", reason, "client_to_upstream", c.published[toUp], "upstream_to_client", c.published[toClient],
				"duration", time.Since(c.accepted))
		}
	}
	c.end(!c.relaying)
}

// end closes what c holds and gives back its slot and its --max-conns place.
func (c *loopConn) end(resetClient bool) {
	c.closed = true
	delete(c.l.dialing, c)
	if c.cancelDial != nil {
		c.cancelDial()
	}
	if fd := c.fd[sideClient]; fd >= 0 {
		if resetClient {
			resetCloseFD(fd)
		} else {
			_ = unix.Close(fd)
		}
	}
	if fd := c.fd[sideUpstream]; fd >= 0 {
		_ = unix.Close(fd)
	}
	c.fd = [2]int{-1, -1}
	for d := range c.flows {
		c.flows[d].release()
	}
	c.l.dropSlot(c)
	c.l.srv.releaseSlot(c.rs)
}
