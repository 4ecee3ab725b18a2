package rawsock

import (
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// sockFlags: every socket is non-blocking and closed on exec.
const sockFlags = syscall.SOCK_NONBLOCK | syscall.SOCK_CLOEXEC

// Accept takes one connection off a listening socket (accept4(2)).
// EAGAIN means the queue is empty; ECONNABORTED, a connection reset
// while queued, is the caller's to skip.
func Accept(fd int) (int, netip.AddrPort, error) {
	for {
		nfd, sa, err := syscall.Accept4(fd, sockFlags)
		switch err {
		case nil:
			return nfd, AddrPort(sa), nil
		case syscall.EINTR:
			continue
		}
		return -1, netip.AddrPort{}, err
	}
}

// Connect opens a socket and connects it to ap without waiting. pending
// means the handshake is under way (connect(2), EINPROGRESS: "It is
// possible to select(2) or poll(2) for completion by selecting the socket
// for writing"); ConnectError then reads its outcome. On error no socket
// is left open.
func Connect(ap netip.AddrPort) (fd int, pending bool, err error) {
	family, sa := Sockaddr(ap)
	fd, err = syscall.Socket(family, syscall.SOCK_STREAM|sockFlags, 0)
	if err != nil {
		return -1, false, os.NewSyscallError("socket", err)
	}
	SetOptions(fd)
	switch err := syscall.Connect(fd, sa); err {
	case nil:
		return fd, false, nil
	case syscall.EINPROGRESS, syscall.EINTR:
		// After EINTR, too, "the connection is established asynchronously".
		return fd, true, nil
	default:
		_ = unix.Close(fd)
		return -1, false, os.NewSyscallError("connect", err)
	}
}

// ConnectError is the outcome of a pending connect, once the socket has
// signalled: connect(2), "use getsockopt(2) to read the SO_ERROR option".
func ConnectError(fd int) error {
	errno, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return os.NewSyscallError("getsockopt", err)
	}
	if errno != 0 {
		return os.NewSyscallError("connect", unix.Errno(errno))
	}
	return nil
}

// SetOptions sets what Go sets on its own TCP sockets: no Nagle delay (a
// relay writes each read at once), and keepalive with the kernel's timers.
func SetOptions(fd int) {
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
}

// ResetClose closes with an RST: socket(7), SO_LINGER with a zero timeout
// makes close discard what is unsent and reset the connection. A refused
// client then fails fast with "connection reset" instead of reading a clean
// EOF it could mistake for an empty response, and no TIME_WAIT is left.
func ResetClose(fd int) {
	_ = unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	_ = unix.Close(fd)
}
