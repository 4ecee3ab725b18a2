package proxy

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coredns-hairpin/hairpin/proxy/internal/rawsock"
)

// connect dials ap without blocking; the socket's first EPOLLOUT (or
// EPOLLERR) ends the dial, in connectDone.
func (c *loopConn) connect(ap netip.AddrPort) {
	c.target = ap
	fd, pending, err := rawsock.Connect(ap, c.l.srv.keepalive())
	if err != nil {
		c.dialFailed(c.dialError(err))
		return
	}
	c.fd[sideUpstream] = fd
	if err := c.register(sideUpstream); err != nil {
		c.dialFailed(c.dialError(err))
		return
	}
	if !pending {
		c.connected()
		return
	}
	c.dialDeadline = c.dialStart.Add(c.l.srv.cfg.DialTimeout)
	c.l.dialing[c] = struct{}{}
}

// connectDone reads the outcome of an in-loop connect.
func (c *loopConn) connectDone(events uint32) {
	if _, ok := c.l.dialing[c]; !ok {
		return
	}
	// A failed connect always shows as EPOLLERR (tcp_poll reports a
	// pending socket error), so only then is the getsockopt(SO_ERROR) that
	// connect(2) suggests worth its call: after EPOLLOUT alone it says 0.
	if events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		if err := rawsock.ConnectError(c.fd[sideUpstream]); err != nil {
			c.dialFailed(c.dialError(err))
			return
		}
	}
	if events&unix.EPOLLOUT != 0 {
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

// dialExternal runs the Server's dialer on a goroutine (name resolution
// may block) and brings the connected socket into the loop.
func (c *loopConn) dialExternal() {
	s := c.l.srv
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.DialTimeout)
	c.cancelDial = cancel
	ev, upstream, name := c.l.ev, c.rs.Upstream, c.rs.name
	go func() {
		fd := -1
		conn, err := s.dial(ctx, "tcp", upstream)
		if err == nil {
			if name != nil {
				name.seed(conn.RemoteAddr())
			}
			fd, err = rawsock.Detach(conn)
		}
		if err != nil {
			err = fmt.Errorf("dial %s: %w", upstream, err)
		}
		if !ev.Post(func() { c.dialedExternal(fd, err) }) && fd >= 0 {
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
	if err := c.register(sideUpstream); err != nil {
		c.dialFailed(c.dialError(err))
		return
	}
	c.connected()
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
