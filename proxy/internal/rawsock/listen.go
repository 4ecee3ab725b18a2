package rawsock

import (
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ReusePort is a net.ListenConfig.Control that sets SO_REUSEPORT, so that
// ListenLike can bind more sockets to the same address. socket(7): "For TCP
// sockets, this option allows accept(2) load distribution in a
// multi-threaded server to be improved by using a distinct listener socket
// for each thread."
func ReusePort(_, _ string, rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return os.NewSyscallError("setsockopt SO_REUSEPORT", serr)
}

// Backlog is what listen(2) asks for; the kernel caps it at
// net.core.somaxconn, as it does Go's own.
const Backlog = 4096

// Listener returns a listening descriptor for ln: a duplicate of ln's own
// socket, or with another true, a new socket bound to the same address
// through SO_REUSEPORT (ln must have been made with ReusePort).
func Listener(ln *net.TCPListener, another bool) (int, error) {
	rc, err := ln.SyscallConn()
	if err != nil {
		return -1, err
	}
	nfd := -1
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		if another {
			nfd, ferr = listenLike(int(fd))
			return
		}
		nfd, ferr = dup(int(fd))
	}); err != nil {
		return -1, err
	}
	return nfd, ferr
}

// listenLike opens a listening socket with fd's family, address and
// dual-stack setting, sharing its port through SO_REUSEPORT.
func listenLike(fd int) (int, error) {
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return -1, os.NewSyscallError("getsockopt SO_DOMAIN", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return -1, os.NewSyscallError("getsockname", err)
	}
	nfd, err := syscall.Socket(domain, syscall.SOCK_STREAM|sockFlags, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	if err := likeListener(fd, nfd, domain, sa); err != nil {
		_ = unix.Close(nfd)
		return -1, err
	}
	return nfd, nil
}

// likeListener gives nfd fd's options and address and makes it listen.
func likeListener(fd, nfd, domain int, sa syscall.Sockaddr) error {
	if domain == unix.AF_INET6 {
		v6only, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY)
		if err != nil {
			return os.NewSyscallError("getsockopt IPV6_V6ONLY", err)
		}
		if err := unix.SetsockoptInt(nfd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v6only); err != nil {
			return os.NewSyscallError("setsockopt IPV6_V6ONLY", err)
		}
	}
	for _, o := range []int{unix.SO_REUSEADDR, unix.SO_REUSEPORT} {
		if err := unix.SetsockoptInt(nfd, unix.SOL_SOCKET, o, 1); err != nil {
			return os.NewSyscallError("setsockopt", err)
		}
	}
	if err := syscall.Bind(nfd, sa); err != nil {
		return os.NewSyscallError("bind", err)
	}
	if err := syscall.Listen(nfd, Backlog); err != nil {
		return os.NewSyscallError("listen", err)
	}
	return nil
}

// dup duplicates fd, close-on-exec.
func dup(fd int) (int, error) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("fcntl", err)
	}
	return nfd, nil
}

// Detach takes the socket out of a net.Conn, and so out of the runtime
// poller, for an event loop's own epoll: a duplicate descriptor, and the
// net.Conn is closed. The duplicate shares the socket's open file, which
// stays in blocking-free mode, as Go left it.
func Detach(conn net.Conn) (int, error) {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		_ = conn.Close()
		return -1, fmt.Errorf("not a TCP connection: %T", conn)
	}
	defer tc.Close()
	rc, err := tc.SyscallConn()
	if err != nil {
		return -1, err
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) { nfd, derr = dup(int(fd)) }); err != nil {
		return -1, err
	}
	return nfd, derr
}
