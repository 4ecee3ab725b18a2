package proxy

import (
	"fmt"
	"strconv"

	"github.com/coredns-hairpin/hairpin/proxy/internal/hostport"
)

// Route is one listen-to-upstream mapping.
type Route struct {
	// Name labels the route in metrics and logs. It defaults to Listen.
	Name string
	// Listen is the local host:port to accept on. The host must be an IP
	// literal or empty (all addresses); port 0 picks a free port.
	Listen string
	// Upstream is the host:port dialled for every accepted connection. The
	// host is resolved again on every dial so a changed Service IP is seen.
	Upstream string
	// HeaderPort is the destination port written in the PROXY header. It
	// defaults to the upstream port: that is the Service port clients dialled
	// (80/443), and nginx derives X-Forwarded-Port and redirects from it, so
	// the container listen port would leak into URLs.
	HeaderPort int
}

// String renders r in hairpin-proxy's --route syntax
// (LISTEN=UPSTREAM[,header-port=PORT][,name=NAME]), which parses back to
// the same route.
func (r Route) String() string {
	s := r.Listen + "=" + r.Upstream
	if _, up := hostport.Split(r.Upstream); r.HeaderPort != 0 && r.HeaderPort != up {
		s += ",header-port=" + strconv.Itoa(r.HeaderPort)
	}
	if r.Name != "" && r.Name != r.Listen {
		s += ",name=" + r.Name
	}
	return s
}

// check validates a route, which may have been built in code rather than
// parsed from a command line.
func (r Route) check() error {
	if err := hostport.CheckListen(r.Listen); err != nil {
		return fmt.Errorf("route %q: listen address: %w", r, err)
	}
	if _, err := hostport.CheckUpstream(r.Upstream); err != nil {
		return fmt.Errorf("route %q: upstream: %w", r, err)
	}
	if r.HeaderPort < 1 || r.HeaderPort > 65535 {
		return fmt.Errorf("route %q: header-port %d out of range 1-65535", r, r.HeaderPort)
	}
	if r.Name == "" {
		return fmt.Errorf("route %q: empty name", r)
	}
	return nil
}
