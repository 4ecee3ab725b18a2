package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coredns-hairpin/hairpin/proxy/internal/sockmap"
)

// Server runs every route of a Config plus the health server.
// Use New, then Start, then Shutdown.
type Server struct {
	cfg    Config
	log    *slog.Logger
	dial   DialFunc
	copy   copyFunc       // the relay's byte mover; see copyFunc
	kernel *sockmap.Relay // the in-kernel relay, when Config.KernelRelay loaded

	copyDefault bool       // no withCopy: KernelRelay may replace copy
	dialDefault bool       // no WithDialFunc: loops may connect themselves
	lookup      lookupFunc // re-resolves upstream names; nil: net.DefaultResolver
	loops       []*loop    // the default relay; none with withCopy or the kernel relay
	version     string
	metrics     *metrics
	dialLog     *dialErrorLog

	routes []*routeServer
	health *health

	active atomic.Int64 // connections holding a --max-conns slot

	mu        sync.Mutex
	conns     map[*clientConn]struct{}
	work      chan *clientConn // to idle setup workers; see dispatch
	started   bool             // Start was called (or Shutdown ran first)
	running   bool             // Start succeeded
	accepting bool             // false once the listeners begin to close
	stopping  atomic.Bool      // /readyz fails from here on

	connWG sync.WaitGroup // one per clientConn handler
	bgWG   sync.WaitGroup // accept loops, checkers, summariser

	bgCtx    context.Context
	bgCancel context.CancelFunc

	shutdownOnce sync.Once
	shutdownErr  error
}

// Option customises a Server.
type Option func(*Server)

// WithLogger sets the logger; the default discards everything.
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithDialFunc replaces the upstream dialer, for tests that need to simulate
// slow or failing upstreams. It is used for client connections and for the
// readiness check alike.
func WithDialFunc(d DialFunc) Option { return func(s *Server) { s.dial = d } }

// withCopy replaces the relay's byte mover, e.g. with an in-kernel relay.
func withCopy(c copyFunc) Option { return func(s *Server) { s.copy = c } }

// withLookup replaces the resolver that refreshes upstream names.
func withLookup(l lookupFunc) Option { return func(s *Server) { s.lookup = l } }

// WithVersion sets the version reported in hairpin_proxy_build_info.
func WithVersion(v string) Option { return func(s *Server) { s.version = v } }

// routeServer is one route's listener and state.
type routeServer struct {
	Route
	ln        net.Listener
	metrics   *routeMetrics
	literal   netip.AddrPort // Upstream, when it is an IP literal
	literalOK bool
	name      *upstreamName // Upstream's address, when it is a name and the dialer ours
	up        atomic.Bool   // last readiness check succeeded
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
		conns:   map[*clientConn]struct{}{},
		work:    make(chan *clientConn),
	}
	for _, o := range opts {
		o(s)
	}
	if s.copy == nil {
		s.copy = adaptiveCopy
		s.copyDefault = true
	}
	if s.dial == nil {
		s.dialDefault = true
		d := &net.Dialer{KeepAliveConfig: osKeepAlive}
		s.dial = d.DialContext
	}
	s.metrics = newMetrics(s.version)
	s.dialLog = newDialErrorLog(s.log, 10*time.Second)
	for _, r := range cfg.Routes {
		rs := &routeServer{Route: r, metrics: s.metrics.forRoute(r.Name)}
		rs.literal, rs.literalOK = literalUpstream(r.Upstream)
		if s.dialDefault && !rs.literalOK {
			rs.name = newUpstreamName(r.Upstream, cfg.DialTimeout, s.lookup)
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

// Registry returns the Prometheus registry holding the proxy's metrics.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// HealthHandler serves /healthz, /readyz and /metrics; Start also serves it
// on HealthAddr.
func (s *Server) HealthHandler() http.Handler { return s.health.handler() }

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
	s.startKernelRelay()
	lc := net.ListenConfig{KeepAliveConfig: osKeepAlive}
	for _, rs := range s.routes {
		ln, err := lc.Listen(context.Background(), "tcp", rs.Listen)
		if err != nil {
			s.closeListeners()
			s.closeKernelRelay()
			return fmt.Errorf("route %q: listen: %w", rs.Name, err)
		}
		rs.ln = ln
	}
	if s.cfg.HealthAddr != "" {
		if err := s.health.listen(s.cfg.HealthAddr); err != nil {
			s.closeListeners()
			s.closeKernelRelay()
			return fmt.Errorf("health-addr: listen: %w", err)
		}
	}
	if s.copyDefault && s.kernel == nil {
		if err := s.makeLoops(); err != nil {
			s.closeListeners()
			return fmt.Errorf("event loop: %w", err)
		}
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
		if s.loops == nil {
			s.bgWG.Go(func() { s.acceptLoop(rs) })
		}
		s.log.Info("route listening", "route", rs.Name, "listen", rs.ln.Addr().String(),
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
		}
	}
	s.health.closeListener()
}

// Addr returns the bound listen address of the named route, which tells
// tests (and logs) the real port when the route asked for port 0.
func (s *Server) Addr(route string) net.Addr {
	for _, rs := range s.routes {
		if rs.Name == route && rs.ln != nil {
			return rs.ln.Addr()
		}
	}
	return nil
}

// HealthAddr returns the bound health address, or nil if disabled.
func (s *Server) HealthAddr() net.Addr { return s.health.addr() }

// Ready reports what /readyz reports: shutdown has not begun and at least
// one route's upstream accepted TCP at its last check.
func (s *Server) Ready() bool {
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
	for _, rs := range s.routes {
		_ = rs.ln.Close()
	}
	for _, l := range s.loops {
		l.call(l.closeListeners)
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
	s.closeKernelRelay()
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

func (s *Server) abortAll(reason string) int {
	s.mu.Lock()
	list := make([]*clientConn, 0, len(s.conns))
	for c := range s.conns {
		list = append(list, c)
	}
	s.mu.Unlock()
	for _, c := range list {
		c.abort(reason)
	}
	n := len(list)
	for _, l := range s.loops {
		l.call(func() { n += l.abortAll(reason) })
	}
	return n
}

// acceptLoop accepts until the listener closes. Temporary errors (EMFILE
// above all) back off like net/http instead of spinning.
func (s *Server) acceptLoop(rs *routeServer) {
	var backoff time.Duration
	for {
		conn, err := rs.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Error("accept failed; backing off", "route", rs.Name, "err", err, "backoff", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.admit(rs, conn)
	}
}

// admit applies the shutdown gate and the connection cap, then hands the
// connection to its own goroutine. The gate and the WaitGroup Add share
// s.mu with shutdown, so no connection slips in after the drain wait began.
func (s *Server) admit(rs *routeServer, conn net.Conn) {
	rs.metrics.accepted.Inc()
	// The connection is complete, its cancel function included, before
	// s.conns publishes it: abortAll may call abort the moment s.mu is
	// released.
	c := &clientConn{srv: s, rs: rs, conn: conn, accepted: time.Now()}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if reason := s.gate(func() { s.conns[c] = struct{}{} }); reason != "" {
		c.cancel()
		rs.metrics.refuse(reason)
		if reason == refusedCap {
			s.log.Debug("connection over cap refused", "route", rs.Name, "client", conn.RemoteAddr().String(), "max_conns", s.cfg.MaxConns)
		}
		resetClose(conn)
		return
	}
	rs.metrics.active.Inc()
	s.dispatch(c)
}

// workerIdle is how long a connection-setup worker waits for the next
// connection before it exits.
const workerIdle = time.Second

// dispatch hands c to an idle setup worker, or starts one. Workers keep
// the stack that building a header and dialling grew (several KiB), so a
// steady stream of new connections pays no stack growth; the relay's own
// goroutines start small and stay small, which is what idle connections
// cost in memory.
func (s *Server) dispatch(c *clientConn) {
	select {
	case s.work <- c:
	default:
		go s.worker(c)
	}
}

func (s *Server) worker(c *clientConn) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		c.serve()
		t.Reset(workerIdle)
		select {
		case c = <-s.work:
		case <-t.C:
			return
		}
	}
}

// gate admits a connection, or names the refusal: shutdown once the
// listeners began closing, cap over --max-conns. An admitted connection
// holds a place in the cap and in the drain wait, and register (if any)
// runs under the same lock. The gate and the WaitGroup Add share s.mu with
// shutdown, so no connection slips in after the drain wait began.
func (s *Server) gate(register func()) string {
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
	if register != nil {
		register()
	}
	return ""
}

// releaseSlot gives back what gate took.
func (s *Server) releaseSlot(rs *routeServer) {
	rs.metrics.active.Dec()
	s.active.Add(-1)
	s.connWG.Done()
}

func (s *Server) release(c *clientConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.releaseSlot(c.rs)
}

// makeLoops builds one event loop per GOMAXPROCS, each with its copy of
// every route's listener. Caller holds s.mu.
func (s *Server) makeLoops() error {
	for range runtime.GOMAXPROCS(0) {
		l, err := newLoop(s)
		if err != nil {
			s.closeLoops()
			return err
		}
		s.loops = append(s.loops, l)
		for _, rs := range s.routes {
			if err := l.addListener(rs); err != nil {
				s.closeLoops()
				return err
			}
		}
	}
	return nil
}

// closeLoops frees loops that never ran.
func (s *Server) closeLoops() {
	for _, l := range s.loops {
		l.closeListeners()
		l.closeFDs()
	}
	s.loops = nil
}

// stopLoops ends the loops once their connections are gone.
func (s *Server) stopLoops() {
	for _, l := range s.loops {
		l.call(func() { l.stop = true })
		<-l.done
	}
}

// resetClose closes with an RST so a refused client fails fast with
// "connection reset" instead of reading a clean EOF it could mistake for an
// empty response; it also leaves no TIME_WAIT behind on the proxy.
func resetClose(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
