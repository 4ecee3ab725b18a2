package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// clientConn is one accepted connection from accept to close.
type clientConn struct {
	srv      *Server
	rs       *routeServer
	conn     net.Conn
	accepted time.Time
	ctx      context.Context // cancelled by abort, to stop a dial in progress
	cancel   context.CancelFunc

	mu      sync.Mutex
	relay   *relay
	aborted string
}

// abort is how shutdown closes a connection at the drain deadline, whatever
// stage it is in.
func (c *clientConn) abort(reason string) {
	c.mu.Lock()
	if c.aborted == "" {
		c.aborted = reason
	}
	r := c.relay
	c.mu.Unlock()
	c.cancel()
	if r != nil {
		r.abort(reason)
		return
	}
	_ = c.conn.Close()
}

// serve prepares the connection (header, dial, header write) and hands it
// to the relay, then returns: the relay's own goroutines carry the bytes,
// and the last of them finishes the connection. The goroutine that ran
// serve, with the stack that dialling grew, goes back to the worker pool.
func (c *clientConn) serve() {
	if !c.prepare() {
		c.cancel()
		c.srv.release(c)
	}
}

// prepare runs up to the relay's start and reports whether it got there.
func (c *clientConn) prepare() bool {
	log := c.srv.log
	rs := c.rs
	m := rs.metrics

	hdr, err := buildHeader(c.srv.cfg.ProxyProtocol, c.conn.RemoteAddr(), c.conn.LocalAddr(), rs.DestAddr, rs.HeaderPort)
	if err != nil {
		m.refuse(refusedHeader)
		log.Warn("connection refused: no valid PROXY header", "route", rs.Name, "err", err)
		resetClose(c.conn)
		return false
	}
	client, ok := c.conn.(*net.TCPConn)
	if !ok {
		m.refuse(refusedHeader)
		log.Warn("connection refused: not a TCP connection", "route", rs.Name, "type", fmt.Sprintf("%T", c.conn))
		resetClose(c.conn)
		return false
	}

	up, err := c.dialUpstream()
	if err != nil {
		resetClose(c.conn)
		if c.abortedReason() != "" {
			m.close(c.abortedReason())
			return false
		}
		cause := classifyDialError(err)
		m.dialError(cause)
		m.refuse(refusedDial)
		c.srv.dialLog.record(rs.Name, rs.Upstream, cause, err)
		log.Debug("upstream dial failed", "route", rs.Name, "client", c.conn.RemoteAddr().String(), "cause", cause, "err", err)
		return false
	}
	upstream, ok := up.(*net.TCPConn)
	if !ok {
		_ = up.Close()
		resetClose(c.conn)
		m.refuse(refusedDial)
		log.Error("upstream dialer returned a connection that is not TCP", "route", rs.Name, "type", fmt.Sprintf("%T", up))
		return false
	}

	early, err := writeHeader(upstream, client, hdr, c.srv.kernel == nil)
	if err != nil {
		_ = upstream.Close()
		resetClose(c.conn)
		m.close(closedError)
		log.Debug("writing PROXY header failed", "route", rs.Name, "err", err)
		return false
	}

	r := newRelay(client, upstream, c.srv.copy, c.srv.cfg.IdleTimeout,
		func(n int64) { m.bytesToUp.Add(float64(n)) },
		func(n int64) { m.bytesToCli.Add(float64(n)) })
	r.moved[toUp].Store(int64(early))
	c.mu.Lock()
	c.relay = r
	reason := c.aborted
	c.mu.Unlock()
	if reason != "" {
		// Aborted while dialling or writing the header.
		r.abort(reason)
	}
	r.start(c.finish)
	return true
}

// finish is the relay's completion: close bookkeeping and release.
func (c *clientConn) finish(reason string, toUp, toCli int64) {
	m := c.rs.metrics
	m.close(reason)
	m.connDuration.Observe(time.Since(c.accepted).Seconds())
	// Guarded: the arguments (an address string, a duration) would be built
	// for every connection even when debug logging is off.
	if log := c.srv.log; log.Enabled(context.Background(), slog.LevelDebug) {
		log.Debug("connection closed", "route", c.rs.Name, "client", c.conn.RemoteAddr().String(),
			"reason", reason, "client_to_upstream", toUp, "upstream_to_client", toCli,
			"duration", time.Since(c.accepted))
	}
	c.cancel()
	c.srv.release(c)
}

func (c *clientConn) abortedReason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.aborted
}

// dialUpstream dials with the route's timeout. The name is resolved on
// every dial, never cached here.
func (c *clientConn) dialUpstream() (net.Conn, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.srv.cfg.DialTimeout)
	defer cancel()
	start := time.Now()
	conn, err := c.srv.dial(ctx, "tcp", c.rs.Upstream)
	c.rs.metrics.dialDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		if errors.Is(err, context.Canceled) && c.ctx.Err() != nil {
			return nil, fmt.Errorf("dial %s: aborted: %w", c.rs.Upstream, err)
		}
		return nil, fmt.Errorf("dial %s: %w", c.rs.Upstream, err)
	}
	return conn, nil
}
