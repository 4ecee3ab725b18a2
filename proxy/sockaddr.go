package proxy

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

// sockaddrAddrPort converts what accept4 and getsockname return.
func sockaddrAddrPort(sa unix.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port))
	}
	return netip.AddrPort{}
}

// addrPortSockaddr is the socket family and address connect needs for ap.
// An IPv4-mapped address is dialled as IPv4, as net.Dial does.
func addrPortSockaddr(ap netip.AddrPort) (int, unix.Sockaddr) {
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		return unix.AF_INET, &unix.SockaddrInet4{Addr: a.Unmap().As4(), Port: int(ap.Port())}
	}
	return unix.AF_INET6, &unix.SockaddrInet6{Addr: a.As16(), Port: int(ap.Port())}
}

// literalUpstream is the upstream's address when it is an IP literal
// without a zone, which the event loop can connect to itself; names (and
// zones) are dialled by the Server's DialFunc.
func literalUpstream(hostport string) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(hostport)
	if err != nil || ap.Addr().Zone() != "" || ap.Port() == 0 {
		return netip.AddrPort{}, false
	}
	return ap, true
}
