package rawsock

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Recv and Send are recvfrom(2) and sendto(2) without an address, as
// HAProxy uses them, rather than read and write, which take the file
// position lock a socket does not need.
func Recv(fd int, b []byte) (int, error) { return rawIO(syscall.SYS_RECVFROM, fd, b, 0) }

// Send writes with MSG_NOSIGNAL: send(2), "Don't generate a SIGPIPE signal
// if the peer on a stream-oriented socket has closed the connection. The
// EPIPE error is still returned", which the caller books.
func Send(fd int, b []byte) (int, error) {
	return rawIO(syscall.SYS_SENDTO, fd, b, syscall.MSG_NOSIGNAL)
}

// SendLast is Send for bytes that a half-close or close follows at once:
// with MSG_MORE, send(2): "The caller has more data to send", the kernel
// holds a short tail back, and tcp_send_fin then puts the FIN on that same
// segment. The peer gets the data and its end in one segment, and one
// wake-up, as HAProxy does before a shutdown.
func SendLast(fd int, b []byte) (int, error) {
	return rawIO(syscall.SYS_SENDTO, fd, b, syscall.MSG_NOSIGNAL|syscall.MSG_MORE)
}

// rawIO makes the recvfrom or sendto call, again on EINTR. It is the
// relay's hot path, two of its calls per exchange, so it makes the call
// itself rather than through retry's closure.
func rawIO(trap uintptr, fd int, b []byte, flags uintptr) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, _, e := syscall.RawSyscall6(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), flags, 0, 0)
		switch e {
		case 0:
			return int(n), nil
		case syscall.EINTR:
			continue
		}
		return 0, e
	}
}

// Again reports whether err is EAGAIN, the error of a non-blocking call
// that would block. Every call here returns a bare syscall.Errno, so a
// type assertion does what errors.Is would, without its walk of the chain.
func Again(err error) bool {
	e, ok := err.(syscall.Errno)
	return ok && e == syscall.EAGAIN
}

// spliceFlags: never block inside the kernel (the loop waits), and move
// pages rather than copy them where the kernel can (splice(2)).
const spliceFlags = unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK

// Splice moves up to n bytes from one descriptor to another, one of them a
// pipe, without copying them to user space.
func Splice(from, to, n int) (int, error) {
	m, err := retry(func() (uintptr, uintptr, syscall.Errno) {
		return syscall.RawSyscall6(unix.SYS_SPLICE, uintptr(from), 0, uintptr(to), 0, uintptr(n), spliceFlags)
	})
	if err != nil {
		return 0, err
	}
	return int(m), nil
}
