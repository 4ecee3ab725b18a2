package proxy

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// halfCloser is a stream that can end its write side alone. *net.TCPConn is
// one; the relay keeps the concrete type behind this interface so io.Copy
// still finds (*net.TCPConn).ReadFrom and Linux splices the payload.
type halfCloser interface {
	net.Conn
	CloseWrite() error
}

// maxTick bounds how long a direction stays inside one io.Copy. Each return
// publishes the bytes moved so far to the metrics and refreshes the shared
// activity clock, so long transfers show up while they run.
const maxTick = 5 * time.Second

// relay moves bytes between a client and an upstream connection.
//
// Idle detection without wrapping the conns: each direction copies with a
// read deadline of one tick on its source. A splice only returns on that
// deadline while its pipe is empty (the deadline is checked before the
// kernel is asked for more data), so resuming loses nothing. On every return
// the direction records whether it moved bytes; when a deadline fires and
// neither direction moved anything for IdleTimeout, the relay closes both.
// The cost is precision: idleness is noticed up to one tick late, and a
// direction blocked writing to a peer that drains slower than one pipe
// (up to 1 MiB) per IdleTimeout counts as idle.
//
// No write deadlines are ever set: a write deadline expiring mid-splice
// would discard the data already moved into the pipe.
type relay struct {
	client, upstream halfCloser
	idle, tick       time.Duration
	start            time.Time
	lastActive       atomic.Int64 // nanoseconds since start
	toUp, toClient   func(int64)  // byte-count sinks, called per tick

	abortOnce sync.Once
	reason    atomic.Value // string: why the relay was cut short
}

func newRelay(client, upstream halfCloser, idle time.Duration, toUp, toClient func(int64)) *relay {
	r := &relay{client: client, upstream: upstream, idle: idle, start: time.Now(), toUp: toUp, toClient: toClient}
	r.tick = maxTick
	if idle > 0 {
		// A tenth of the idle timeout keeps the overshoot to ~10%.
		r.tick = min(max(idle/10, 10*time.Millisecond), maxTick)
	}
	return r
}

// abort closes both connections, unblocking any copy in progress. The first
// reason wins.
func (r *relay) abort(reason string) {
	r.abortOnce.Do(func() {
		r.reason.Store(reason)
		_ = r.client.Close()
		_ = r.upstream.Close()
	})
}

func (r *relay) abortReason() string {
	s, _ := r.reason.Load().(string)
	return s
}

func (r *relay) touch() { r.lastActive.Store(int64(time.Since(r.start))) }

func (r *relay) idleFor() time.Duration {
	return time.Since(r.start) - time.Duration(r.lastActive.Load())
}

// run relays until both directions end and returns the close reason and the
// bytes moved each way. Both connections are closed when it returns.
func (r *relay) run() (reason string, up, down int64) {
	upDone := make(chan struct{})
	downDone := make(chan struct{})
	var upErr, downErr error
	go func() {
		down, downErr = r.direction(r.client, r.upstream, r.toClient)
		close(downDone)
		if downErr != nil {
			r.abort(ClosedError)
		}
		r.watch(upDone)
	}()
	up, upErr = r.direction(r.upstream, r.client, r.toUp)
	close(upDone)
	if upErr != nil {
		r.abort(ClosedError)
	}
	r.watch(downDone)
	<-downDone
	// The goroutine may still be in watch; it returns as soon as it sees
	// upDone closed, which already happened.
	r.abort(ClosedEOF)
	reason = r.abortReason()
	return reason, up, down
}

// direction copies src to dst until EOF, which it forwards as a half-close,
// or until an error. It returns the bytes copied.
func (r *relay) direction(dst, src halfCloser, count func(int64)) (int64, error) {
	var total int64
	for {
		if err := src.SetReadDeadline(time.Now().Add(r.tick)); err != nil {
			return total, err
		}
		n, err := io.Copy(dst, src)
		if n > 0 {
			total += n
			count(n)
			r.touch()
		}
		if err == nil {
			// EOF from src: tell dst, but keep the other direction open so
			// a client that half-closes still gets its response.
			if cerr := dst.CloseWrite(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
				return total, cerr
			}
			return total, nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return total, err
		}
		if r.idle > 0 && r.idleFor() >= r.idle {
			r.abort(ClosedIdle)
			return total, nil
		}
	}
}

// watch waits for the other direction to finish. A direction blocked writing
// to a peer that stopped reading never hits its read deadline, so after one
// direction ends, its goroutine keeps the idle clock for both.
func (r *relay) watch(other <-chan struct{}) {
	if r.idle <= 0 {
		<-other
		return
	}
	t := time.NewTicker(r.tick)
	defer t.Stop()
	for {
		select {
		case <-other:
			return
		case <-t.C:
			if r.idleFor() >= r.idle {
				r.abort(ClosedIdle)
				<-other
				return
			}
		}
	}
}
