package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	proxyproto "github.com/pires/go-proxyproto"
)

// errNotTCP marks a header that could not be built for a TCP client; such a
// connection is refused rather than sent upstream with a LOCAL or UNKNOWN
// header, which nginx would accept without a client address.
var errNotTCP = errors.New("not a TCP address pair")

// buildHeader builds the PROXY header for a client connection: the source is
// the client, the destination is dest if valid, else the accepted socket's
// local address, with headerPort.
//
// That local address is what the client dialled only when nothing rewrote
// it: on loopback, or when a pod dials the proxy pod directly. Through a
// Service, kube-proxy (or any CNI's service load balancing) DNATs the
// ClusterIP to the chosen pod's IP before the SYN arrives, so the accepted
// socket's local address, and thus the header, carries the proxy pod's IP,
// never the ClusterIP. Routes that need a fixed address set Route.DestAddr.
//
// IPv4 clients accepted on a dual-stack socket appear as ::ffff:a.b.c.d; they
// are unmapped so ingress sees a TCP4 header and a plain IPv4 client address,
// the same as from the external load balancer. If the two sides still differ
// in family the header falls back to TCP6 with the IPv4 side mapped, which
// keeps both addresses truthful.
func buildHeader(version int, sap, dap netip.AddrPort, dest netip.Addr, headerPort int) (*proxyproto.Header, error) {
	// Zones are dropped: the header has no field for them.
	sip := sap.Addr().Unmap().WithZone("")
	dip := dap.Addr().Unmap().WithZone("")
	if dest.IsValid() {
		dip = dest.Unmap().WithZone("")
	}
	if !sip.IsValid() || !dip.IsValid() {
		return nil, fmt.Errorf("build PROXY header for %v -> %v: %w", sap, dap, errNotTCP)
	}
	if sip.Is4() != dip.Is4() {
		sip = netip.AddrFrom16(sip.As16())
		dip = netip.AddrFrom16(dip.As16())
	}
	h := proxyproto.HeaderProxyFromAddrs(byte(version),
		&net.TCPAddr{IP: sip.AsSlice(), Port: int(sap.Port())},
		&net.TCPAddr{IP: dip.AsSlice(), Port: headerPort},
	)
	// HeaderProxyFromAddrs falls back to LOCAL/UNSPEC when it cannot infer a
	// family; for a TCP client that would silently erase the client address.
	if h.Command != proxyproto.PROXY || (h.TransportProtocol != proxyproto.TCPv4 && h.TransportProtocol != proxyproto.TCPv6) {
		return nil, fmt.Errorf("build PROXY header for %v -> %v: got command %#x transport %#x: %w",
			sap, dap, byte(h.Command), byte(h.TransportProtocol), errNotTCP)
	}
	return h, nil
}

// probeHeader is what the background upstream check writes before it
// closes: a valid header that carries no connection, "PROXY UNKNOWN\r\n" in
// v1 and the LOCAL command in v2 (spec sections 2.1 and 2.2, the forms
// meant for health checks). A check that sent nothing would make nginx log
// `broken header: ""` on TLS listeners (and "while reading PROXY protocol"
// on plain ones) every interval: the very line operators search for when
// hairpin breaks.
func probeHeader(version int) ([]byte, error) {
	h := &proxyproto.Header{Version: byte(version), Command: proxyproto.LOCAL, TransportProtocol: proxyproto.UNSPEC}
	if version == 1 {
		h.Command = proxyproto.PROXY
	}
	b, err := h.Format()
	if err != nil {
		return nil, fmt.Errorf("build PROXY v%d probe header: %w", version, err)
	}
	return b, nil
}
