package rawsock

import (
	"net/netip"
	"os"
	"syscall"
)

// AddrPort converts what accept4 and getsockname return. The types are
// package syscall's: x/sys/unix asks every AF_INET socket for its protocol
// (a getsockopt, to tell L2TP apart) on each conversion.
func AddrPort(sa syscall.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *syscall.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port))
	}
	return netip.AddrPort{}
}

// Sockaddr is the socket family and address connect needs for ap. An
// IPv4-mapped address is dialled as IPv4, as net.Dial does.
func Sockaddr(ap netip.AddrPort) (int, syscall.Sockaddr) {
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		return syscall.AF_INET, &syscall.SockaddrInet4{Addr: a.Unmap().As4(), Port: int(ap.Port())}
	}
	return syscall.AF_INET6, &syscall.SockaddrInet6{Addr: a.As16(), Port: int(ap.Port())}
}

// LocalAddr is the socket's own address (getsockname(2)).
func LocalAddr(fd int) (netip.AddrPort, error) {
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return netip.AddrPort{}, os.NewSyscallError("getsockname", err)
	}
	return AddrPort(sa), nil
}
