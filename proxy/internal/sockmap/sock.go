package sockmap

import (
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// gateLowat is the receive low-water mark that holds a socket's segments
// back from the verdict program while a pair is being inserted. The kernel
// caps it at half of tcp_rmem[2].
const gateLowat = 1 << 30

// sock is one socket of a pair: a *net.TCPConn (Attach), or a bare
// descriptor (AttachFD) owned by a caller with its own event loop.
type sock struct {
	conn *net.TCPConn // nil for a bare descriptor
	fd   int
}

// control runs f on the socket's descriptor.
func (s sock) control(f func(fd int) error) error {
	if s.conn == nil {
		return f(s.fd)
	}
	rc, err := s.conn.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// socketFD returns the descriptor; the caller keeps the socket alive while
// using it.
func socketFD(s sock) (int, error) {
	var out int
	err := s.control(func(fd int) error { out = fd; return nil })
	return out, err
}

// cookie is the kernel's socket cookie (SO_COOKIE), the key the verdict
// program reads with bpf_get_socket_cookie.
func cookie(s sock) (uint64, error) {
	var v uint64
	err := s.control(func(fd int) (err error) {
		v, err = unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("SO_COOKIE: %w", err)
	}
	return v, nil
}

// setLowat sets SO_RCVLOWAT. TCP signals data-ready as part of the call when
// the queued bytes reach the new mark (tcp_set_rcvlowat), which is how
// lowering it hands already queued segments to the verdict program.
func setLowat(s sock, n int) error {
	err := s.control(func(fd int) error {
		return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVLOWAT, n)
	})
	if err != nil {
		return fmt.Errorf("SO_RCVLOWAT: %w", err)
	}
	return nil
}

// written is how many payload bytes the socket has accepted for sending
// since it was created, offset by a constant (the SYN): bytes acknowledged
// plus bytes still in the send queue. The two are read one after the other;
// acknowledgements arriving in between make the sum low, never high, so a
// reading that reaches a target is proof.
func written(s sock) (uint64, error) {
	var acked uint64
	var outq int
	err := s.control(func(fd int) error {
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			return fmt.Errorf("TCP_INFO: %w", err)
		}
		acked = info.Bytes_acked
		if outq, err = unix.IoctlGetInt(fd, unix.SIOCOUTQ); err != nil {
			return fmt.Errorf("SIOCOUTQ: %w", err)
		}
		return nil
	})
	return acked + uint64(outq), err
}

// monoNow reads CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns.
func monoNow() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// monoSince is the time from a CLOCK_MONOTONIC reading to now.
func monoSince(ns uint64) time.Duration {
	now := monoNow()
	if ns >= now {
		return 0
	}
	return time.Duration(now - ns)
}
