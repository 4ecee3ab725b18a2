package proxy

import (
	"net/netip"
	"syscall"
)

// sockaddrAddrPort converts what accept4 and getsockname return. These come
// from package syscall: x/sys/unix asks every AF_INET socket for its
// protocol (a getsockopt, to tell L2TP apart) on each conversion.
func sockaddrAddrPort(sa syscall.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *syscall.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port))
	}
	return netip.AddrPort{}
}

// addrPortSockaddr is the socket family and address connect needs for ap.
// An IPv4-mapped address is dialled as IPv4, as net.Dial does.
func addrPortSockaddr(ap netip.AddrPort) (int, syscall.Sockaddr) {
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		return syscall.AF_INET, &syscall.SockaddrInet4{Addr: a.Unmap().As4(), Port: int(ap.Port())}
	}
	return syscall.AF_INET6, &syscall.SockaddrInet6{Addr: a.As16(), Port: int(ap.Port())}
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
