package proxy

import (
	"fmt"
	"net/netip"

	"github.com/coredns-hairpin/hairpin/proxy/internal/hostport"
	"github.com/coredns-hairpin/hairpin/proxy/routeflag"
)

// Route is one listen-to-upstream mapping. It is defined, with its
// --route syntax, in package routeflag, which kubectl-hairpin reads a proxy
// Pod's routes with.
type Route = routeflag.Route

// checkRoute validates a route, which may have been built in code rather
// than parsed from a command line.
func checkRoute(r Route) error {
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
