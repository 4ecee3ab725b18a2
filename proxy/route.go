package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
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

// RouteSyntax documents the --route value format; it is shown in --help.
const RouteSyntax = "LISTEN=UPSTREAM[,header-port=PORT][,name=NAME]"

// ParseRoute parses one route in RouteSyntax, for example
// ":8443=ingress-nginx-controller.ingress-nginx.svc:443,header-port=443".
// IPv6 literals are bracketed: "[::1]:8080=[::1]:80".
func ParseRoute(s string) (Route, error) {
	var r Route
	spec := strings.TrimSpace(s)
	if spec == "" {
		return r, errors.New("empty route")
	}
	parts := strings.Split(spec, ",")
	listen, upstream, ok := strings.Cut(parts[0], "=")
	if !ok {
		return r, fmt.Errorf("route %q: want %s", s, RouteSyntax)
	}
	r.Listen = strings.TrimSpace(listen)
	r.Upstream = strings.TrimSpace(upstream)
	if err := checkListenAddr(r.Listen); err != nil {
		return r, fmt.Errorf("route %q: listen address: %w", s, err)
	}
	upPort, err := checkUpstreamAddr(r.Upstream)
	if err != nil {
		return r, fmt.Errorf("route %q: upstream: %w", s, err)
	}
	seen := map[string]bool{}
	for _, opt := range parts[1:] {
		key, val, ok := strings.Cut(strings.TrimSpace(opt), "=")
		if !ok || key == "" {
			return r, fmt.Errorf("route %q: option %q: want key=value", s, opt)
		}
		if seen[key] {
			return r, fmt.Errorf("route %q: option %q given twice", s, key)
		}
		seen[key] = true
		switch key {
		case "header-port":
			p, err := parsePort(val, false)
			if err != nil {
				return r, fmt.Errorf("route %q: header-port: %w", s, err)
			}
			r.HeaderPort = p
		case "name":
			if val == "" {
				return r, fmt.Errorf("route %q: name is empty", s)
			}
			r.Name = val
		default:
			return r, fmt.Errorf("route %q: unknown option %q (known: header-port, name)", s, key)
		}
	}
	if r.HeaderPort == 0 {
		r.HeaderPort = upPort
	}
	if r.Name == "" {
		r.Name = r.Listen
	}
	return r, nil
}

// String renders r in RouteSyntax, so that it parses back to the same route.
func (r Route) String() string {
	s := r.Listen + "=" + r.Upstream
	if _, up := hostPort(r.Upstream); r.HeaderPort != 0 && r.HeaderPort != up {
		s += ",header-port=" + strconv.Itoa(r.HeaderPort)
	}
	if r.Name != "" && r.Name != r.Listen {
		s += ",name=" + r.Name
	}
	return s
}

// checkListenAddr rejects listen hosts that are names: binding would resolve
// them once at startup, which hides a misconfiguration behind DNS.
func checkListenAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	if _, err := parsePort(port, true); err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	if host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			return fmt.Errorf("%q: host must be an IP address or empty: %w", addr, err)
		}
	}
	return nil
}

// checkUpstreamAddr returns the upstream port; the host may be a DNS name.
func checkUpstreamAddr(addr string) (int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", addr, err)
	}
	if host == "" {
		return 0, fmt.Errorf("%q: missing host", addr)
	}
	if strings.ContainsAny(host, " /") {
		return 0, fmt.Errorf("%q: invalid host", addr)
	}
	p, err := parsePort(port, false)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", addr, err)
	}
	return p, nil
}

// parsePort accepts 1–65535, and 0 as well when allowZero (listen ports).
func parsePort(s string, allowZero bool) (int, error) {
	if s == "" {
		return 0, errors.New("missing port")
	}
	p, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("port %q is not a number", s)
	}
	lo := 1
	if allowZero {
		lo = 0
	}
	if p < lo || p > 65535 {
		return 0, fmt.Errorf("port %d out of range %d-65535", p, lo)
	}
	return p, nil
}

// hostPort splits an address already validated by checkListenAddr or
// checkUpstreamAddr.
func hostPort(addr string) (string, int) {
	h, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return h, n
}

// isWildcard reports whether a listen host binds every address.
func isWildcard(host string) bool {
	if host == "" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsUnspecified()
}

// listenConflict reports whether two listen addresses would contend for the
// same socket. Port 0 never conflicts because the kernel picks distinct ports.
func listenConflict(a, b string) bool {
	ah, ap := hostPort(a)
	bh, bp := hostPort(b)
	if ap == 0 || bp == 0 || ap != bp {
		return false
	}
	if isWildcard(ah) || isWildcard(bh) {
		return true
	}
	return sameIP(ah, bh)
}

func sameIP(a, b string) bool {
	x, err1 := netip.ParseAddr(a)
	y, err2 := netip.ParseAddr(b)
	return err1 == nil && err2 == nil && x.Unmap() == y.Unmap()
}

// upstreamLoops reports whether dialling upstream would land on listen, i.e.
// the proxy would feed itself and stack PROXY headers. Only cases decidable
// without DNS or interface enumeration are caught: equal IPs, and a wildcard
// listener reached through loopback, "localhost" or an unspecified address.
func upstreamLoops(listen, upstream string) bool {
	lh, lp := hostPort(listen)
	uh, up := hostPort(upstream)
	if lp == 0 || lp != up {
		return false
	}
	if sameIP(lh, uh) {
		return true
	}
	local := strings.EqualFold(strings.TrimSuffix(uh, "."), "localhost")
	if a, err := netip.ParseAddr(uh); err == nil {
		a = a.Unmap()
		local = a.IsLoopback() || a.IsUnspecified()
		if !isWildcard(lh) {
			return false
		}
	}
	if !local {
		return false
	}
	if isWildcard(lh) {
		return true
	}
	l, err := netip.ParseAddr(lh)
	return err == nil && l.Unmap().IsLoopback()
}
