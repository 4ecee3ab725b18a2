package rawsock

import (
	"net/netip"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sockFlags: every socket is non-blocking and closed on exec.
const sockFlags = syscall.SOCK_NONBLOCK | syscall.SOCK_CLOEXEC

// Accept takes one connection off a listening socket (accept4(2)).
// EAGAIN means the queue is empty; ECONNABORTED, a connection reset
// while queued, is the caller's to skip.
func Accept(fd int) (int, netip.AddrPort, error) {
	var s sockaddr
	s.n = syscall.SizeofSockaddrAny
	nfd, err := retry(func() (uintptr, uintptr, syscall.Errno) {
		return syscall.RawSyscall6(syscall.SYS_ACCEPT4, uintptr(fd), uintptr(unsafe.Pointer(&s.raw)), uintptr(unsafe.Pointer(&s.n)), sockFlags, 0, 0)
	})
	if err != nil {
		return -1, netip.AddrPort{}, err
	}
	return int(nfd), s.addrPort(), nil
}

// Connect opens a socket and connects it to ap without waiting. pending
// means the handshake is under way (connect(2), EINPROGRESS: "It is
// possible to select(2) or poll(2) for completion by selecting the socket
// for writing"); ConnectError then reads its outcome. On error no socket
// is left open. The socket gets SetOptions with keepalive.
func Connect(ap netip.AddrPort, keepalive bool) (fd int, pending bool, err error) {
	var s sockaddr
	family := s.set(ap)
	r, err := retry(func() (uintptr, uintptr, syscall.Errno) {
		return syscall.RawSyscall(syscall.SYS_SOCKET, uintptr(family), syscall.SOCK_STREAM|sockFlags, 0)
	})
	if err != nil {
		return -1, false, os.NewSyscallError("socket", err)
	}
	fd = int(r)
	SetOptions(fd, keepalive)
	// Not retried on EINTR: the connection then "is established
	// asynchronously" (connect(2)), as after EINPROGRESS.
	_, _, e := syscall.RawSyscall(syscall.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&s.raw)), uintptr(s.n))
	switch e {
	case 0:
		return fd, false, nil
	case syscall.EINPROGRESS, syscall.EINTR:
		return fd, true, nil
	default:
		_ = Close(fd)
		return -1, false, os.NewSyscallError("connect", e)
	}
}

// ConnectError is the outcome of a pending connect, once the socket has
// signalled: connect(2), "use getsockopt(2) to read the SO_ERROR option".
func ConnectError(fd int) error {
	var errno int32
	n := uint32(unsafe.Sizeof(errno))
	if _, err := retry(func() (uintptr, uintptr, syscall.Errno) {
		return syscall.RawSyscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), syscall.SOL_SOCKET, syscall.SO_ERROR, uintptr(unsafe.Pointer(&errno)), uintptr(unsafe.Pointer(&n)), 0)
	}); err != nil {
		return os.NewSyscallError("getsockopt", err)
	}
	if errno != 0 {
		return os.NewSyscallError("connect", syscall.Errno(errno))
	}
	return nil
}

// SetOptions turns off Nagle's delay, as Go does on its own TCP sockets (a
// relay writes each read at once), and with keepalive turns on TCP
// keepalive with the kernel's timers, which find a dead peer of an idle
// connection.
func SetOptions(fd int, keepalive bool) {
	setInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	if keepalive {
		setInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
	}
}

func setInt(fd, level, opt int, v int32) {
	_, _ = retry(func() (uintptr, uintptr, syscall.Errno) {
		return syscall.RawSyscall6(syscall.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(unsafe.Pointer(&v)), unsafe.Sizeof(v), 0)
	})
}

// ResetClose closes with an RST: socket(7), SO_LINGER with a zero timeout
// makes close discard what is unsent and reset the connection. A refused
// client then fails fast with "connection reset" instead of reading a clean
// EOF it could mistake for an empty response, and no TIME_WAIT is left.
func ResetClose(fd int) {
	l := syscall.Linger{Onoff: 1, Linger: 0}
	_, _ = retry(func() (uintptr, uintptr, syscall.Errno) {
		return syscall.RawSyscall6(syscall.SYS_SETSOCKOPT, uintptr(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, uintptr(unsafe.Pointer(&l)), unsafe.Sizeof(l), 0)
	})
	_ = Close(fd)
}
