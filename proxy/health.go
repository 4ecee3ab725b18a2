package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// health serves /healthz, /readyz and /metrics and runs the background
// upstream checks that /readyz reports. Probes never dial: a kubelet probing
// every second on every replica would otherwise hammer the ingress.
type health struct {
	s        *Server
	probeHdr []byte // written by every background check; see probeHeader
	mu       sync.Mutex
	ln       net.Listener
	srv      *http.Server
}

func newHealth(s *Server) (*health, error) {
	hdr, err := probeHeader(s.cfg.ProxyProtocol)
	if err != nil {
		return nil, err
	}
	return &health{s: s, probeHdr: hdr}, nil
}

func (h *health) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", h.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(h.s.metrics.reg, promhttp.HandlerOpts{}))
	return mux
}

// readyz is 200 unless shutdown has begun or every route's upstream failed
// its last check. One process serves the routes of every target, so one
// broken upstream must not withdraw the others: its clients are reset at
// dial time (and counted), while every other route keeps serving. Per-route
// state is in hairpin_proxy_upstream_up{route} and in /readyz?verbose.
func (h *health) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	s := h.s
	var lines []string
	down := 0
	for _, rs := range s.routes {
		state := "up"
		if !rs.up.Load() {
			state = "down"
			down++
		}
		lines = append(lines, fmt.Sprintf("route %s: upstream %s %s", rs.Name, rs.Upstream, state))
	}
	status, summary := http.StatusOK, "ok"
	switch {
	case s.stopping.Load():
		status, summary = http.StatusServiceUnavailable, "shutting down"
	case down == len(s.routes):
		status, summary = http.StatusServiceUnavailable, "every upstream is down"
	case down > 0:
		summary = fmt.Sprintf("ok: %d of %d upstreams down", down, len(s.routes))
	}
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, summary)
	if _, verbose := r.URL.Query()["verbose"]; verbose || status != http.StatusOK || down > 0 {
		_, _ = fmt.Fprintln(w, strings.Join(lines, "\n"))
	}
}

func (h *health) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.ln = ln
	h.mu.Unlock()
	return nil
}

func (h *health) addr() net.Addr {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ln == nil {
		return nil
	}
	return h.ln.Addr()
}

func (h *health) closeListener() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ln != nil {
		_ = h.ln.Close()
	}
}

// start runs the HTTP server (if bound) and one checker per route.
func (h *health) start(ctx context.Context, wg *sync.WaitGroup) {
	h.mu.Lock()
	ln := h.ln
	if ln != nil {
		h.srv = &http.Server{
			Handler:           h.handler(),
			ReadHeaderTimeout: 5 * time.Second,
			IdleTimeout:       time.Minute,
		}
	}
	srv := h.srv
	h.mu.Unlock()
	if srv != nil {
		wg.Go(func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				h.s.log.Error("health server stopped", "err", err)
			}
		})
	}
	for _, rs := range h.s.routes {
		wg.Go(func() { h.check(ctx, rs) })
	}
}

// shutdown stops the HTTP server; it runs last so /healthz and /metrics stay
// available for the whole drain.
func (h *health) shutdown() {
	h.mu.Lock()
	srv := h.srv
	h.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
}

// check dials the route's upstream every ReadyInterval, starting at once so
// a healthy proxy turns ready without waiting a full interval. A connected
// probe writes the probe header (see probeHeader) and closes: the upstream
// then sees a well-formed connection that carries nothing, so its error log
// stays clean.
func (h *health) check(ctx context.Context, rs *routeServer) {
	s := h.s
	t := time.NewTicker(s.cfg.ReadyInterval)
	defer t.Stop()
	for first := true; ; first = false {
		err := h.probe(ctx, rs)
		if ctx.Err() != nil {
			return
		}
		up := err == nil
		if was := rs.up.Swap(up); first || was != up {
			if up {
				s.log.Info("upstream accepting TCP", "route", rs.Name, "upstream", rs.Upstream)
			} else {
				s.log.Warn("upstream not accepting TCP; not ready", "route", rs.Name, "upstream", rs.Upstream,
					"cause", classifyDialError(err), "err", err)
			}
		}
		if up {
			rs.metrics.up.Set(1)
		} else {
			rs.metrics.up.Set(0)
		}
		if s.ready() {
			s.metrics.ready.Set(1)
		} else {
			s.metrics.ready.Set(0)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probe makes one check of the route's upstream: connect, write the probe
// header, close.
func (h *health) probe(ctx context.Context, rs *routeServer) error {
	s := h.s
	// Not cancelled by shutdown: a dial that the kernel completed but Go
	// abandoned would close the socket without a header, the very "broken
	// header" this probe exists to avoid. DialTimeout still bounds it.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.DialTimeout)
	defer cancel()
	conn, err := s.dial(dctx, "tcp", rs.Upstream)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetWriteDeadline(time.Now().Add(s.cfg.DialTimeout)); err != nil {
		return fmt.Errorf("probe %s: %w", rs.Upstream, err)
	}
	if _, err := conn.Write(h.probeHdr); err != nil {
		return fmt.Errorf("probe %s: write PROXY header: %w", rs.Upstream, err)
	}
	return nil
}
