package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/coredns-hairpin/hairpin/proxy/internal/evloop"
	"github.com/coredns-hairpin/hairpin/proxy/internal/rawsock"
)

// connEvents is the interest set of a relayed socket, registered once:
// edge-triggered, so no epoll_ctl is needed to pause or resume a direction.
// EPOLLPRI: TCP urgent data, after which a read stops short at the mark.
const connEvents = unix.EPOLLIN | unix.EPOLLPRI | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET

// loopConn is one connection owned by a loop, from accept to close: its
// relay, and around it the dial, the header, the clock and the books. Only
// the loop's goroutine touches it.
type loopConn struct {
	relay
	l        *loop
	rs       *routeServer
	idx      int            // in l.conns
	ends     [2]endpoint    // the sockets' Handlers, by side
	reg      [2]evloop.Reg  // their registrations
	client   netip.AddrPort // the client's address
	accepted time.Time

	relaying     bool           // the header is queued and both flows run
	target       netip.AddrPort // what connect dials, for upstreamName.drop
	dialStart    time.Time      // for the dial duration metric
	dialDeadline time.Time      // in-loop connect only
	cancelDial   context.CancelFunc

	published [2]int64 // bytes the metrics have seen, by direction
	lastMove  time.Time
	closed    bool
}

// endpoint is the Handler of one of a connection's sockets.
type endpoint struct {
	c *loopConn
	s side
}

// Event is one epoll event of the socket.
func (e *endpoint) Event(events uint32) { e.c.event(e.s, events) }

func newLoopConn(l *loop, rs *routeServer, fd int, client netip.AddrPort) *loopConn {
	c := &loopConn{l: l, rs: rs, client: client, accepted: l.ev.Now()}
	c.fd = [2]int{fd, -1}
	c.bufs = &l.bufs
	c.ends = [2]endpoint{{c, sideClient}, {c, sideUpstream}}
	return c
}

// start builds the header, registers the client socket and begins the
// upstream dial: in the loop when the route has an address for it
// (routeServer.loopAddr), else on a goroutine through the Server's dialer.
func (c *loopConn) start() {
	s := c.l.srv
	fd := c.fd[sideClient]
	hdr, err := c.header(fd)
	if err != nil {
		c.rs.metrics.refuse(refusedHeader)
		s.log.Warn("connection refused: no valid PROXY header", "route", c.rs.Name, "err", err)
		rawsock.ResetClose(fd)
		s.releaseSlot(c.rs)
		return
	}
	c.l.add(c)
	if err := c.register(sideClient); err != nil {
		s.log.Error("event loop: socket registration failed", "route", c.rs.Name, "err", err)
		c.end(true)
		return
	}
	c.prime(hdr)
	c.dialStart = time.Now()
	if ap, ok := c.rs.loopAddr(c.l.ev.Now()); ok {
		c.connect(ap)
		return
	}
	c.dialExternal()
}

// register adds socket s to the loop's epoll.
func (c *loopConn) register(s side) error {
	reg, err := c.l.ev.Add(c.fd[s], connEvents, &c.ends[s])
	c.reg[s] = reg
	return err
}

// header formats the PROXY header for the client socket fd.
func (c *loopConn) header(fd int) ([]byte, error) {
	local, err := rawsock.LocalAddr(fd)
	if err != nil {
		return nil, err
	}
	h, err := buildHeader(c.l.srv.cfg.ProxyProtocol, c.client, local, c.rs.DestAddr, c.rs.HeaderPort)
	if err != nil {
		return nil, err
	}
	b, err := h.Format()
	if err != nil {
		return nil, fmt.Errorf("format PROXY header: %w", err)
	}
	return b, nil
}

// connected starts the relay: the header leaves together with whatever the
// client has sent so far (HTTP and TLS clients speak first), in one
// segment; that saves a write here and a read and wake-up in the upstream.
// It never waits for client bytes, so server-first protocols work too.
func (c *loopConn) connected() {
	delete(c.l.dialing, c)
	c.rs.metrics.dialDuration.Observe(time.Since(c.dialStart).Seconds())
	c.relaying = true
	c.lastMove = c.l.ev.Now()
	up := &c.flows[toUpstream]
	up.writable = true
	if up.readable {
		if _, end := c.fill(toUpstream); end != "" {
			c.finish(end)
			return
		}
	}
	if end := c.pump(toUpstream); end != "" {
		c.finish(end)
		return
	}
	if end := c.pump(toClient); end != "" {
		c.finish(end)
	}
}

// event applies one epoll event of socket s.
func (c *loopConn) event(s side, events uint32) {
	if c.closed {
		return
	}
	if s == sideUpstream && !c.relaying {
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
	if !c.relaying {
		c.mark(s, events)
		return
	}
	if end := c.relay.event(s, events); end != "" {
		c.finish(end)
	}
}

// onTick publishes the bytes moved since the last tick and enforces the
// idle timeout.
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
	sinks := [2]prometheus.Counter{toUpstream: c.rs.metrics.bytesToUp, toClient: c.rs.metrics.bytesToCli}
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
				"reason", reason, "client_to_upstream", c.published[toUpstream], "upstream_to_client", c.published[toClient],
				"duration", time.Since(c.accepted))
		}
	}
	c.end(!c.relaying)
}

// end closes what c holds and gives back its place in the loop and in
// --max-conns.
func (c *loopConn) end(resetClient bool) {
	c.closed = true
	delete(c.l.dialing, c)
	if c.cancelDial != nil {
		c.cancelDial()
	}
	for s, fd := range c.fd {
		if fd < 0 {
			continue
		}
		_ = c.l.ev.Remove(c.reg[s], -1) // close takes fd out of the epoll set
		if side(s) == sideClient && resetClient {
			rawsock.ResetClose(fd)
		} else {
			_ = rawsock.Close(fd)
		}
	}
	c.fd = [2]int{-1, -1}
	c.release()
	c.l.remove(c)
	c.l.srv.releaseSlot(c.rs)
}
