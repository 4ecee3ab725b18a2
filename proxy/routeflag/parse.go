package routeflag

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/coredns-hairpin/hairpin/proxy/internal/hostport"
)

// Syntax documents a --route value; the command shows it in --help.
const Syntax = "LISTEN=UPSTREAM[,header-port=PORT][,name=NAME][,dest-addr=IP]"

// Parse parses one route in Syntax, for example
// ":8443=ingress-nginx-controller.ingress-nginx.svc:443,header-port=443".
// IPv6 literals are bracketed: "[::1]:8080=[::1]:80". An error names the
// route and the part of it that is wrong.
func Parse(s string) (Route, error) {
	var r Route
	spec := strings.TrimSpace(s)
	if spec == "" {
		return r, errors.New("empty route")
	}
	parts := strings.Split(spec, ",")
	listen, upstream, ok := strings.Cut(parts[0], "=")
	if !ok {
		return r, fmt.Errorf("route %q: want %s", s, Syntax)
	}
	r.Listen = strings.TrimSpace(listen)
	r.Upstream = strings.TrimSpace(upstream)
	if err := hostport.CheckListen(r.Listen); err != nil {
		return r, fmt.Errorf("route %q: listen address: %w", s, err)
	}
	upPort, err := hostport.CheckUpstream(r.Upstream)
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
			p, err := hostport.ParsePort(val, false)
			if err != nil {
				return r, fmt.Errorf("route %q: header-port: %w", s, err)
			}
			r.HeaderPort = p
		case "name":
			if val == "" {
				return r, fmt.Errorf("route %q: name is empty", s)
			}
			r.Name = val
		case "dest-addr":
			a, err := netip.ParseAddr(val)
			if err != nil {
				return r, fmt.Errorf("route %q: dest-addr: %q is not an IP address", s, val)
			}
			// The rest (zone, family) is checked by proxy.Config.Validate.
			r.DestAddr = a
		default:
			return r, fmt.Errorf("route %q: unknown option %q (known: header-port, name, dest-addr)", s, key)
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
