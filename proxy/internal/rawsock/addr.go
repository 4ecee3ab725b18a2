package rawsock

import (
	"net/netip"
	"os"
	"syscall"
	"unsafe"
)

// sockaddr is a socket address as the kernel reads and writes it
// (sockaddr_in or sockaddr_in6, ip(7) and ipv6(7)), so that accept4,
// getsockname and connect need no conversion through an allocated
// syscall.Sockaddr.
type sockaddr struct {
	raw syscall.RawSockaddrAny
	n   uint32 // its length, as the kernel takes and returns it
}

// set makes s the address of ap and returns its family. An IPv4-mapped
// address is dialled as IPv4, as net.Dial does.
func (s *sockaddr) set(ap netip.AddrPort) int {
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		p := (*syscall.RawSockaddrInet4)(unsafe.Pointer(&s.raw))
		p.Family, p.Addr = syscall.AF_INET, a.Unmap().As4()
		putPort(&p.Port, ap.Port())
		s.n = syscall.SizeofSockaddrInet4
		return syscall.AF_INET
	}
	p := (*syscall.RawSockaddrInet6)(unsafe.Pointer(&s.raw))
	p.Family, p.Addr = syscall.AF_INET6, a.As16()
	putPort(&p.Port, ap.Port())
	s.n = syscall.SizeofSockaddrInet6
	return syscall.AF_INET6
}

// addrPort is s as an address; the zero AddrPort for a family other than
// IPv4 and IPv6.
func (s *sockaddr) addrPort() netip.AddrPort {
	switch s.raw.Addr.Family {
	case syscall.AF_INET:
		p := (*syscall.RawSockaddrInet4)(unsafe.Pointer(&s.raw))
		return netip.AddrPortFrom(netip.AddrFrom4(p.Addr), port(&p.Port))
	case syscall.AF_INET6:
		p := (*syscall.RawSockaddrInet6)(unsafe.Pointer(&s.raw))
		return netip.AddrPortFrom(netip.AddrFrom16(p.Addr), port(&p.Port))
	}
	return netip.AddrPort{}
}

// The port field is in network byte order: ip(7), "sin_port ... in
// network byte order".
func port(p *uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(p))
	return uint16(b[0])<<8 | uint16(b[1])
}

func putPort(p *uint16, v uint16) {
	b := (*[2]byte)(unsafe.Pointer(p))
	b[0], b[1] = byte(v>>8), byte(v)
}

// LocalAddr is the socket's own address (getsockname(2)).
func LocalAddr(fd int) (netip.AddrPort, error) {
	var s sockaddr
	s.n = syscall.SizeofSockaddrAny
	if _, err := retry(func() (uintptr, uintptr, syscall.Errno) {
		return syscall.RawSyscall(syscall.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&s.raw)), uintptr(unsafe.Pointer(&s.n)))
	}); err != nil {
		return netip.AddrPort{}, os.NewSyscallError("getsockname", err)
	}
	return s.addrPort(), nil
}
