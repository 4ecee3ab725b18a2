package proxy

import (
	"time"

	"github.com/coredns-hairpin/hairpin/proxy/internal/evloop"
)

// loop is one event loop of the relay and what it owns: its copy of every
// route's listener and the connections it accepted, from accept4 to close,
// all with non-blocking system calls on one epoll instance (internal/evloop),
// the way HAProxy's threads work. A connection costs no goroutine and,
// while idle, no buffer: a small struct and its kernel sockets.
//
// Why not a goroutine per direction: every small exchange then costs a
// read, a write and a read that returns EAGAIN (the runtime poller resets
// readiness on every RawConn.Read, so the last read cannot be skipped), plus
// a goroutine park and wake-up. Here readiness is edge-triggered and a
// short read means the socket is drained (relay.fill), so an exchange is
// one read and one write, and one epoll_wait serves many of them.
//
// Everything here is touched only by the loop's goroutine; the Server
// reaches it through ev.Call.
type loop struct {
	srv *Server
	ev  *evloop.Loop

	listeners []*loopListener
	conns     []*loopConn            // every open connection; loopConn.idx is its index
	dialing   map[*loopConn]struct{} // connections waiting for connect
	bufs      bufCache               // the spare buffer of its connections' flows

	tick     time.Duration
	nextTick time.Time
}

// maxTick bounds the loop's clock: how stale the byte metrics of a long
// transfer may be, and how late idleness is noticed.
const maxTick = 5 * time.Second

// relayTick is the clock period for an idle timeout; a tenth of it keeps
// the overshoot to ~10 %.
func relayTick(idle time.Duration) time.Duration {
	if idle <= 0 {
		return maxTick
	}
	return min(max(idle/10, 10*time.Millisecond), maxTick)
}

func newLoop(s *Server) (*loop, error) {
	ev, err := evloop.New()
	if err != nil {
		return nil, err
	}
	return &loop{srv: s, ev: ev, tick: relayTick(s.cfg.IdleTimeout), dialing: map[*loopConn]struct{}{}}, nil
}

// run is the loop's goroutine; it returns after stop, once its listeners
// and connections are gone.
func (l *loop) run() { l.ev.Run(l.timers) }

// stop ends run; the Server calls it once every connection has closed.
func (l *loop) stop() {
	l.ev.Call(l.ev.Stop)
	<-l.ev.Done()
}

// timers is the loop's clock, run after every batch: dial deadlines (few
// connections dial at once), listener resumes, and every tick the
// connections' byte counts and idle timeout. It returns the next of these.
func (l *loop) timers(now time.Time) time.Time {
	if !now.Before(l.nextTick) {
		l.nextTick = now.Add(l.tick)
		for i := len(l.conns) - 1; i >= 0; i-- { // onTick may remove conns[i]
			l.conns[i].onTick(now)
		}
	}
	next := l.nextTick
	for c := range l.dialing {
		if !now.Before(c.dialDeadline) {
			c.dialTimedOut()
		} else if c.dialDeadline.Before(next) {
			next = c.dialDeadline
		}
	}
	for _, li := range l.listeners {
		if li.resume.IsZero() {
			continue
		}
		if !now.Before(li.resume) {
			li.resume = time.Time{}
			_ = l.listen(li)
		} else if li.resume.Before(next) {
			next = li.resume
		}
	}
	return next
}

// add makes c one of the loop's connections.
func (l *loop) add(c *loopConn) {
	c.idx = len(l.conns)
	l.conns = append(l.conns, c)
}

// remove forgets c: the last connection takes its place.
func (l *loop) remove(c *loopConn) {
	last := l.conns[len(l.conns)-1]
	l.conns[c.idx], last.idx = last, c.idx
	l.conns[len(l.conns)-1] = nil
	l.conns = l.conns[:len(l.conns)-1]
}

// abortAll closes every connection of the loop with reason and returns
// how many there were.
func (l *loop) abortAll(reason string) int {
	n := len(l.conns)
	for i := len(l.conns) - 1; i >= 0; i-- {
		l.conns[i].finish(reason)
	}
	return n
}
