package proxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// smallBuf is the user-space buffer of one read. A read that fills it marks
// its direction as bulk (see adaptiveCopy).
const smallBuf = 16 << 10

// pipeSize is the pipe capacity asked for once a direction splices: larger
// pipes mean fewer splice calls per megabyte.
const pipeSize = 1 << 20

// bufPool holds the user-space buffers. A buffer is taken only once the
// source is readable and returned once its bytes are written, so an idle
// connection holds no buffer at all.
var bufPool = sync.Pool{New: func() any { b := make([]byte, smallBuf); return &b }}

// adaptiveCopy is the default copyFunc, after HAProxy's splice-auto. Small
// exchanges (requests, responses, TLS records) are copied through a pooled
// user-space buffer: one read and one write each, the cheapest path for a
// few kilobytes. Once a read fills the whole buffer the direction is
// streaming, and from then on it splices through a pipe of its own, so bulk
// payload never crosses into user space. The pipe is closed when the
// direction ends; that bounds a connection to fdsPerConn descriptors.
//
// Waiting is done with the runtime poller through RawConn, without read
// deadlines, so no timer is armed per read; moved is updated after every
// write, which is what the relay's idle clock and byte metrics read.
func adaptiveCopy(dst, src *net.TCPConn, moved *atomic.Int64, _ time.Duration) error {
	rsrc, err := src.SyscallConn()
	if err != nil {
		return err
	}
	rdst, err := dst.SyscallConn()
	if err != nil {
		return err
	}
	for {
		n, full, err := copyOnce(dst, rsrc)
		moved.Add(int64(n))
		if err != nil {
			return eofIsNil(err)
		}
		if full {
			return spliceAll(rdst, rsrc, moved)
		}
	}
}

// copyOnce waits until src is readable, reads what is there into a pooled
// buffer and writes it all to dst. full reports that the read filled the
// buffer.
func copyOnce(dst *net.TCPConn, src syscall.RawConn) (n int, full bool, err error) {
	var bp *[]byte
	var rerr error
	err = src.Read(func(fd uintptr) bool {
		bp = bufPool.Get().(*[]byte)
		for {
			n, rerr = syscall.Read(int(fd), *bp)
			if rerr != syscall.EINTR {
				break
			}
		}
		if rerr == syscall.EAGAIN {
			bufPool.Put(bp)
			bp = nil
			return false
		}
		return true
	})
	if err == nil {
		err = rerr
	}
	if bp == nil {
		return 0, false, err
	}
	defer bufPool.Put(bp)
	if err != nil {
		return 0, false, err
	}
	if n <= 0 {
		return 0, false, io.EOF
	}
	if _, err := dst.Write((*bp)[:n]); err != nil {
		return 0, false, err
	}
	return n, n == len(*bp), nil
}

// spliceAll moves src to dst through a pipe until EOF or an error.
func spliceAll(dst, src syscall.RawConn, moved *atomic.Int64) error {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		return err
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	// Best effort: the default 64 KiB pipe works too, with more calls.
	_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, uintptr(p[1]), syscall.F_SETPIPE_SZ, pipeSize)
	for {
		var n int
		var serr error
		err := src.Read(func(fd uintptr) bool {
			for {
				var m int64
				m, serr = syscall.Splice(int(fd), nil, p[1], nil, pipeSize, spliceFlags)
				n = int(m)
				if serr != syscall.EINTR {
					break
				}
			}
			return serr != syscall.EAGAIN
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil // EOF
		}
		for n > 0 {
			var w int
			var werr error
			err := dst.Write(func(fd uintptr) bool {
				for {
					var m int64
					m, werr = syscall.Splice(p[0], nil, int(fd), nil, n, spliceFlags)
					w = int(m)
					if werr != syscall.EINTR {
						break
					}
				}
				return werr != syscall.EAGAIN
			})
			if err == nil {
				err = werr
			}
			if err != nil {
				return err
			}
			n -= w
			moved.Add(int64(w))
		}
	}
}

// spliceFlags: never block inside the kernel (the runtime poller waits),
// and move pages rather than copy where the kernel can.
const spliceFlags = 0x1 /* SPLICE_F_MOVE */ | 0x2 /* SPLICE_F_NONBLOCK */

// eofIsNil maps a clean end of stream to nil, per the copyFunc contract.
func eofIsNil(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
