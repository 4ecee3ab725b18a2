package proxy

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// spliceCopy is the default copyFunc: io.Copy between two *net.TCPConn, so
// Linux splices the payload through a pipe without a user-space copy.
//
// io.Copy only returns at EOF or an error, so src carries a read deadline of
// one tick; on each return the bytes so far are added to moved, and the
// copy resumes. A splice only returns on that deadline while its pipe is
// empty (the deadline is checked before the kernel is asked for more data),
// so resuming loses nothing. No write deadline is ever set: one expiring
// mid-splice would discard the data already in the pipe.
func spliceCopy(dst, src *net.TCPConn, moved *atomic.Int64, tick time.Duration) error {
	for {
		if err := src.SetReadDeadline(time.Now().Add(tick)); err != nil {
			return err
		}
		n, err := io.Copy(dst, src)
		moved.Add(n)
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
	}
}
