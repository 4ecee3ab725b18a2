// Package hostport validates and compares the host:port strings of proxy
// routes. It decides everything without DNS or interface enumeration, so a
// configuration is accepted or rejected the same way on every machine.
package hostport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// CheckListen rejects listen hosts that are names: binding would resolve
// them once at startup, which hides a misconfiguration behind DNS.
func CheckListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	if _, err := ParsePort(port, true); err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	if host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			return fmt.Errorf("%q: host must be an IP address or empty: %w", addr, err)
		}
	}
	return nil
}

// CheckUpstream returns the upstream port; the host may be a DNS name.
func CheckUpstream(addr string) (int, error) {
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
	p, err := ParsePort(port, false)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", addr, err)
	}
	return p, nil
}

// ParsePort accepts 1–65535, and 0 as well when allowZero (listen ports).
func ParsePort(s string, allowZero bool) (int, error) {
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

// Split splits an address already validated by CheckListen or
// CheckUpstream.
func Split(addr string) (string, int) {
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

// ListenConflict reports whether two listen addresses would contend for the
// same socket. Port 0 never conflicts because the kernel picks distinct ports.
func ListenConflict(a, b string) bool {
	ah, ap := Split(a)
	bh, bp := Split(b)
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

// UpstreamLoops reports whether dialling upstream would land on listen, i.e.
// the proxy would feed itself and stack PROXY headers. Only cases decidable
// without DNS or interface enumeration are caught: equal IPs, and a wildcard
// listener reached through loopback, "localhost" or an unspecified address.
func UpstreamLoops(listen, upstream string) bool {
	lh, lp := Split(listen)
	uh, up := Split(upstream)
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
