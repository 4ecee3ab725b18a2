package proxy

import (
	"fmt"
	"net/netip"
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
	// Upstream is the host:port dialled for every accepted connection. A
	// name is re-resolved at most once a second (upstream_name.go), so a
	// changed Service IP is seen.
	Upstream string
	// HeaderPort is the destination port written in the PROXY header. It
	// defaults to the upstream port: that is the Service port clients dialled
	// (80/443), and nginx derives X-Forwarded-Port and redirects from it, so
	// the container listen port would leak into URLs.
	HeaderPort int
	// DestAddr, when valid, is written as the header's destination address
	// instead of the accepted socket's local address. In a cluster that
	// local address is the proxy pod's IP (kube-proxy has DNATed the
	// ClusterIP the client dialled), so an operator who wants what the load
	// balancer itself would write gives its public IP here. An IPv4 DestAddr
	// is written IPv4-mapped for IPv6 clients; an IPv6 one maps IPv4 clients
	// the same way, since a header has one family.
	DestAddr netip.Addr
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
	if r.DestAddr.IsValid() {
		s += ",dest-addr=" + r.DestAddr.String()
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
	if r.DestAddr.IsValid() {
		if err := checkDestAddr(r.DestAddr, r.Listen); err != nil {
			return fmt.Errorf("route %q: dest-addr: %w", r, err)
		}
	}
	return nil
}

// checkDestAddr reports why a Route's DestAddr cannot be written in the
// header of connections accepted on listen: a zone (the header has no field
// for it), an unspecified address, or an IPv6 address on an IPv4-only
// listener, whose every client would then be written IPv4-mapped.
func checkDestAddr(dest netip.Addr, listen string) error {
	switch {
	case dest.Zone() != "":
		return fmt.Errorf("%s: a zone cannot be written in a PROXY header", dest)
	case dest.IsUnspecified():
		return fmt.Errorf("%s: unspecified address; give the address clients should see as dialled", dest)
	}
	if h, _ := hostport.Split(listen); h != "" {
		if l, err := netip.ParseAddr(h); err == nil && !l.IsUnspecified() && l.Unmap().Is4() && !dest.Unmap().Is4() {
			return fmt.Errorf("%s is IPv6 but listen address %s only accepts IPv4 clients; give an IPv4 address", dest, listen)
		}
	}
	return nil
}
