package proxy

import (
	"errors"
	"fmt"
	"time"

	"github.com/coredns-hairpin/hairpin/proxy/internal/hostport"
)

// Config is the complete proxy configuration. Build one with DefaultConfig,
// adjust it, and pass it to New, which validates it.
type Config struct {
	// Routes are the listen-to-upstream mappings; at least one is required.
	Routes []Route
	// ProxyProtocol is the PROXY protocol version written: 1 or 2.
	ProxyProtocol int
	// DialTimeout bounds each upstream dial, including name resolution.
	DialTimeout time.Duration
	// IdleTimeout closes a connection after no bytes moved in either
	// direction for this long; 0 disables it.
	IdleTimeout time.Duration
	// MaxConns caps concurrent connections across all routes of the process;
	// 0 means no cap. A process-wide cap is what protects the file
	// descriptor limit, which is per process; DefaultMaxConns sizes it from
	// that limit.
	MaxConns int
	// DrainTimeout is how long in-flight connections may continue after the
	// listeners close during shutdown.
	DrainTimeout time.Duration
	// Lameduck is how long the proxy keeps accepting after shutdown starts
	// (with /readyz already failing) so that endpoints are withdrawn before
	// the listeners close.
	Lameduck time.Duration
	// HealthAddr is the listen address of /healthz, /readyz and /metrics;
	// empty disables the health server.
	HealthAddr string
	// ReadyInterval is the period of the background upstream TCP check that
	// drives /readyz.
	ReadyInterval time.Duration
}

// DefaultConfig returns the defaults documented in --help, without routes.
// Listen ports stay at or above 1024, so the proxy never needs privileges.
func DefaultConfig() Config {
	return Config{
		ProxyProtocol: 1,
		DialTimeout:   5 * time.Second,
		IdleTimeout:   10 * time.Minute,
		MaxConns:      DefaultMaxConns(),
		DrainTimeout:  25 * time.Second,
		Lameduck:      5 * time.Second,
		HealthAddr:    ":9090",
		ReadyInterval: 5 * time.Second,
	}
}

// Validate reports the first problem that would make the proxy misbehave,
// naming the offending setting.
func (c *Config) Validate() error {
	if len(c.Routes) == 0 {
		return errors.New("no routes")
	}
	if c.ProxyProtocol != 1 && c.ProxyProtocol != 2 {
		return fmt.Errorf("proxy-protocol: unknown version %d (want 1 or 2)", c.ProxyProtocol)
	}
	durations := []struct {
		name     string
		d        time.Duration
		positive bool
	}{
		{"dial-timeout", c.DialTimeout, true},
		{"idle-timeout", c.IdleTimeout, false},
		{"drain-timeout", c.DrainTimeout, false},
		{"lameduck", c.Lameduck, false},
		{"ready-interval", c.ReadyInterval, true},
	}
	for _, d := range durations {
		if d.d < 0 {
			return fmt.Errorf("%s: negative duration %s", d.name, d.d)
		}
		if d.positive && d.d == 0 {
			return fmt.Errorf("%s: must be greater than zero", d.name)
		}
	}
	if c.MaxConns < 0 {
		return fmt.Errorf("max-conns: negative value %d (0 means no cap)", c.MaxConns)
	}
	if c.HealthAddr != "" {
		if err := hostport.CheckListen(c.HealthAddr); err != nil {
			return fmt.Errorf("health-addr: %w", err)
		}
	}
	names := map[string]bool{}
	for i, r := range c.Routes {
		if err := checkRoute(r); err != nil {
			return err
		}
		if names[r.Name] {
			return fmt.Errorf("route %q: name %q used by two routes", r, r.Name)
		}
		names[r.Name] = true
		for _, o := range c.Routes[:i] {
			if hostport.ListenConflict(o.Listen, r.Listen) {
				return fmt.Errorf("route %q: listen address %s already used by route %q", r, r.Listen, o)
			}
		}
		for _, o := range c.Routes {
			if hostport.UpstreamLoops(o.Listen, r.Upstream) {
				if o.Listen == r.Listen {
					return fmt.Errorf("route %q: upstream %s is the route's own listen address", r, r.Upstream)
				}
				return fmt.Errorf("route %q: upstream %s is the listen address of route %q", r, r.Upstream, o)
			}
		}
		if c.HealthAddr != "" && hostport.ListenConflict(c.HealthAddr, r.Listen) {
			return fmt.Errorf("route %q: listen address %s collides with health-addr %s", r, r.Listen, c.HealthAddr)
		}
	}
	return nil
}

// normalize fills the defaults of routes built in code: the name is the
// listen address, the header port the upstream port.
func (c *Config) normalize() {
	for i := range c.Routes {
		r := &c.Routes[i]
		if r.Name == "" {
			r.Name = r.Listen
		}
		if r.HeaderPort == 0 {
			if p, err := hostport.CheckUpstream(r.Upstream); err == nil {
				r.HeaderPort = p
			}
		}
	}
}
