package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns-hairpin/hairpin/proxy/internal/rawsock"
)

// Server runs every route of a Config plus the health server.
// Use New, then Start, then Shutdown.
type Server struct {
	cfg  Config
	log  *slog.Logger
	dial dialFunc

	lookup  lookupFunc // re-resolves upstream names; nil: net.DefaultResolver
	loops   []*loop    // one per GOMAXPROCS; they own every connection
	version string
	metrics *metrics
	dialLog *dialErrorLog

	routes []*routeServer
	health *health

	active atomic.Int64 // connections holding a --max-conns slot

	mu        sync.Mutex
	started   bool        // Start was called (or Shutdown ran first)
	running   bool        // Start succeeded
	accepting bool        // false once the listeners begin to close
	stopping  atomic.Bool // /readyz fails from here on

	connWG sync.WaitGroup // one per admitted connection
	bgWG   sync.WaitGroup // readiness checkers, the health server, the dial-error summariser

	bgCtx    context.Context
	bgCancel context.CancelFunc

	shutdownOnce sync.Once
	shutdownErr  error
}

// Option customises a Server.
type Option func(*Server)

// WithLogger sets the logger; the default discards everything.
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithVersion sets the version reported in hairpin_proxy_build_info.
func WithVersion(v string) Option { return func(s *Server) { s.version = v } }

// routeServer is one route's listener and state.
type routeServer struct {
	Route
	// ln is bound in Start and closed once the loops hold its socket
	// (makeLoops); addr is its bound address.
	ln      net.Listener
	addr    net.Addr
	metrics *routeMetrics
	// With the default dialer the loops connect themselves: to literal, when
	// Upstream is an IP literal, else to name's cached address.
	literal   netip.AddrPort
	literalOK bool
	name      *upstreamName
	up        atomic.Bool // last readiness check succeeded
}

// loopAddr is the address a loop may connect to itself; false means the
// Server's dialer dials (a test's dialer, or a name not resolved yet).
func (rs *routeServer) loopAddr(now time.Time) (netip.AddrPort, bool) {
	if rs.literalOK {
		return rs.literal, true
	}
	if rs.name != nil {
		return rs.name.current(now)
	}
	return netip.AddrPort{}, false
}

// New validates cfg and builds a Server; nothing is bound until Start.
func New(cfg Config, opts ...Option) (*Server, error) {
	cfg.normalize()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	cfg.Routes = append([]Route(nil), cfg.Routes...)
	s := &Server{
		cfg:     cfg,
		log:     slog.New(slog.DiscardHandler),
		version: "dev",
	}
	for _, o := range opts {
		o(s)
	}
	dialDefault := s.dial == nil // no test dialer: the loops may connect themselves
	if dialDefault {
		d := &net.Dialer{KeepAliveConfig: osKeepAlive}
		s.dial = d.DialContext
	}
	s.metrics = newMetrics(s.version)
	s.dialLog = newDialErrorLog(s.log, 10*time.Second)
	for _, r := range cfg.Routes {
		rs := &routeServer{Route: r, metrics: s.metrics.forRoute(r.Name)}
		if dialDefault {
			if rs.literal, rs.literalOK = literalUpstream(r.Upstream); !rs.literalOK {
				rs.name = newUpstreamName(r.Upstream, cfg.DialTimeout, s.lookup)
			}
		}
		s.routes = append(s.routes, rs)
	}
	h, err := newHealth(s)
	if err != nil {
		return nil, err
	}
	s.health = h
	return s, nil
}

// Start binds every listener (and the health listener) and starts serving.
// If any bind fails, everything already bound is closed and the error names
// the address.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("server already started")
	}
	s.started = true
	lc := net.ListenConfig{Control: rawsock.ReusePort}
	for _, rs := range s.routes {
		ln, err := lc.Listen(context.Background(), "tcp", rs.Listen)
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("route %q: listen: %w", rs.Name, err)
		}
		rs.ln, rs.addr = ln, ln.Addr()
	}
	if s.cfg.HealthAddr != "" {
		if err := s.health.listen(s.cfg.HealthAddr); err != nil {
			s.closeListeners()
			return fmt.Errorf("health-addr: listen: %w", err)
		}
	}
	if err := s.makeLoops(); err != nil {
		s.closeListeners()
		return fmt.Errorf("event loop: %w", err)
	}
	s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
	s.accepting = true
	s.running = true
	s.health.start(s.bgCtx, &s.bgWG)
	s.bgWG.Go(func() { s.dialLog.run(s.bgCtx) })
	if fit := DefaultMaxConns(); s.cfg.MaxConns == 0 || s.cfg.MaxConns > fit {
		s.log.Warn("max-conns exceeds what the fd limit allows; EMFILE, not the cap, will refuse connections",
			"max_conns", s.cfg.MaxConns, "fits", fit, "fds_per_conn", fdsPerConn)
	}
	for _, l := range s.loops {
		go l.run()
	}
	for _, rs := range s.routes {
		s.log.Info("route listening", "route", rs.Name, "listen", rs.addr.String(),
			"upstream", rs.Upstream, "header_port", rs.HeaderPort)
	}
	return nil
}

// closeListeners closes every bound route listener. Caller holds s.mu or
// owns the server exclusively.
func (s *Server) closeListeners() {
	for _, rs := range s.routes {
		if rs.ln != nil {
			_ = rs.ln.Close()
			rs.ln = nil
		}
	}
	s.health.closeListener()
}

// Addr returns the bound listen address of the named route, which tells
// tests (and logs) the real port when the route asked for port 0.
func (s *Server) Addr(route string) net.Addr {
	for _, rs := range s.routes {
		if rs.Name == route && rs.addr != nil {
			return rs.addr
		}
	}
	return nil
}

// HealthAddr returns the bound health address, or nil if disabled.
func (s *Server) HealthAddr() net.Addr { return s.health.addr() }

// ready reports what /readyz reports: shutdown has not begun and at least
// one route's upstream accepted TCP at its last check.
func (s *Server) ready() bool {
	if s.stopping.Load() {
		return false
	}
	for _, rs := range s.routes {
		if rs.up.Load() {
			return true
		}
	}
	return false
}

// Shutdown runs the shutdown sequence and returns when it is complete:
//
//  1. /readyz fails at once, so the Service stops routing new clients here;
//  2. after Lameduck the listeners close, since endpoint removal takes time
//     to reach every node and clients that still arrive are served;
//  3. in-flight connections may finish for up to DrainTimeout;
//  4. whatever is left is closed, and the health server stops.
//
// If ctx ends first, the remaining steps are cut short and every
// connection is closed immediately. Calling Shutdown again waits for the
// first call and returns its result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

func (s *Server) shutdown(ctx context.Context) error {
	s.stopping.Store(true)
	s.metrics.ready.Set(0)
	s.mu.Lock()
	s.started = true // a Start after Shutdown must not bind
	running := s.running
	s.mu.Unlock()
	if !running {
		return nil
	}
	s.log.Info("shutdown: readiness failing, lameduck", "lameduck", s.cfg.Lameduck)
	cut := false
	if !sleepCtx(ctx, s.cfg.Lameduck) {
		cut = true
	}

	s.mu.Lock()
	s.accepting = false
	s.mu.Unlock()
	for _, l := range s.loops {
		l.ev.Call(l.closeListeners)
	}
	s.log.Info("shutdown: listeners closed, draining", "active", s.active.Load(), "drain_timeout", s.cfg.DrainTimeout)

	drained := make(chan struct{})
	go func() { s.connWG.Wait(); close(drained) }()
	if !cut {
		t := time.NewTimer(s.cfg.DrainTimeout)
		select {
		case <-drained:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	select {
	case <-drained:
	default:
		n := s.abortAll(closedDrain)
		s.log.Warn("shutdown: drain deadline reached, closing connections", "closed", n)
		<-drained
	}
	s.stopLoops()

	s.bgCancel()
	s.health.shutdown()
	s.bgWG.Wait()
	s.log.Info("shutdown: complete")
	return nil
}

// sleepCtx waits d and reports false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// abortAll closes every connection with reason and returns how many there
// were.
func (s *Server) abortAll(reason string) int {
	n := 0
	for _, l := range s.loops {
		l.ev.Call(func() { n += l.abortAll(reason) })
	}
	return n
}

// keepalive reports whether relayed sockets get TCP keepalive: only with the
// idle timeout off. The kernel's first probe waits tcp_keepalive_time (two
// hours by default), so with a timeout the timeout always reaps a dead
// peer's connection first, and the two setsockopt calls per connection
// would buy nothing.
func (s *Server) keepalive() bool { return s.cfg.IdleTimeout == 0 }

// gate admits a connection, or names the refusal: shutdown once the
// listeners began closing, cap over --max-conns. An admitted connection
// holds a place in the cap and in the drain wait. The gate and the
// WaitGroup Add share s.mu with shutdown, so no connection slips in after
// the drain wait began.
func (s *Server) gate() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.accepting {
		return refusedShutdown
	}
	if s.cfg.MaxConns > 0 && s.active.Load() >= int64(s.cfg.MaxConns) {
		return refusedCap
	}
	s.active.Add(1)
	s.connWG.Add(1)
	return ""
}

// releaseSlot gives back what gate took.
func (s *Server) releaseSlot(rs *routeServer) {
	rs.metrics.active.Dec()
	s.active.Add(-1)
	s.connWG.Done()
}

// makeLoops builds one event loop per GOMAXPROCS, each with its copy of
// every route's listener. Caller holds s.mu.
func (s *Server) makeLoops() error {
	for i := range runtime.GOMAXPROCS(0) {
		l, err := newLoop(s)
		if err != nil {
			s.closeLoops()
			return err
		}
		s.loops = append(s.loops, l)
		for _, rs := range s.routes {
			if err := l.addListener(rs, i == 0); err != nil {
				s.closeLoops()
				return err
			}
		}
	}
	// The route's own listener leaves the runtime poller: its socket lives
	// on in the first loop's duplicate. Left there, every connection queued
	// on it would also wake the runtime's netpoller, which has no goroutine
	// to give it to. Closing it removes that registration (the runtime's
	// EPOLL_CTL_DEL runs before the close, on a descriptor still open).
	for _, rs := range s.routes {
		_ = rs.ln.Close()
		rs.ln = nil
	}
	return nil
}

// closeLoops frees loops that never ran.
func (s *Server) closeLoops() {
	for _, l := range s.loops {
		l.closeListeners()
		l.ev.Close()
	}
	s.loops = nil
}

// stopLoops ends the loops once their connections are gone.
func (s *Server) stopLoops() {
	for _, l := range s.loops {
		l.stop()
	}
}
