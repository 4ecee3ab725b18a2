package proxy

import (
	"syscall"
	"unsafe"
)

// recv and send are the event loop's socket I/O: recvfrom and sendto
// without an address, as HAProxy does, rather than read and write, which
// take the file-position lock a socket does not need. They are raw system
// calls: the sockets are non-blocking, so a call never waits, and the
// runtime's bookkeeping for a call that might block (entersyscall and
// exitsyscall) would cost more than the call itself. MSG_NOSIGNAL: a peer
// that has gone away is an EPIPE to book, not a signal.
func recv(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func send(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), syscall.MSG_NOSIGNAL, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
