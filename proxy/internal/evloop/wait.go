package evloop

import (
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Grain rounds a wait's deadline up, so that a stream of deadlines a few
// milliseconds apart does not reset the runtime poller's timer on every
// wait: a deadline fires at most this late.
const Grain = 10 * time.Millisecond

// wait returns the next batch of events. With none ready it parks the
// goroutine in the runtime poller, on the epoll descriptor, until there are,
// something is posted, or next passes.
//
// It never blocks in epoll_wait itself. A goroutine blocked in a system
// call makes sysmon hand its P to another thread every 20 µs, which costs
// more than the relaying it interrupts (with a spare P sysmon leaves it,
// but such a wait made 0.90× the keep-alive req/s: proxy/README.md, "Raw
// system calls"); and a raw blocking wait, which
// keeps the P, was measured worse still with a spare P for the rest of the
// process (GOMAXPROCS one above the loops): 3-4 context switches per
// new connection instead of about 1, and 0.7× the connections per second,
// because a wait that finds nothing sleeps at once where the scheduler
// first looks for other work. Parking here nests this epoll in the
// runtime's, and a peer's write to a parked loop's socket runs both
// epolls' callbacks: nginx spent about 6 µs more per new connection than
// with HAProxy (36 against 30 µs). A raw wait on a thread of its own, with
// the epoll descriptor outside the runtime poller, removed that and 5 % of
// the machine's CPU per connection; with a spare P for the rest of the
// process, req/s moved only within the runs' spread (keep-alive +4 %, new
// connections -2 %), and sysmon preempts every loop every 10 ms even when
// idle; a second epoll armed one-shot only while parked did not lower
// nginx's cost.
//
// next is compared with now, the clock timers ran with, rather than with
// a fresh reading of the clock: a deadline that passed while timers ran
// goes to the runtime poller like any other, rounded up to Grain, so it
// fires at most Grain late, as every deadline may.
func (l *Loop) wait(events []unix.EpollEvent, now, next time.Time) int {
	if l.queued.Load() != 0 || (!next.IsZero() && !next.After(now)) {
		return l.poll(events)
	}
	if deadline := roundUp(next); !deadline.Equal(l.waitTo) {
		_ = l.ep.SetReadDeadline(deadline)
		l.waitTo = deadline
	}
	l.events, l.got = events, 0
	l.sleeping.Store(true)
	err := l.eprc.Read(l.ready)
	l.sleeping.Store(false)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		// Only a closed descriptor fails here, which Run never does
		// while it waits; back off rather than spin.
		time.Sleep(Grain)
	}
	return l.got
}

// pollReady is the callback of wait's RawConn.Read: it polls into
// l.events and reports whether the wait is over. A method value made once
// in New, so that a wait allocates no closure.
func (l *Loop) pollReady(uintptr) bool {
	l.got = l.poll(l.events)
	return l.got > 0 || l.queued.Load() != 0
}

// poll is a non-blocking epoll_wait, raw like the loop's other calls: it
// never blocks, so entersyscall's bookkeeping would buy nothing. It is
// epoll_pwait(2) with no signal mask, which "is equivalent to
// epoll_wait()" and exists on every architecture (arm64 has no
// epoll_wait).
func (l *Loop) poll(events []unix.EpollEvent) int {
	n, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0 // EINTR; nothing else is possible on a valid epoll fd
	}
	return int(n)
}

// roundUp rounds t up to Grain; the zero time stays zero (no deadline).
func roundUp(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	r := t.Round(Grain)
	if r.Before(t) {
		r = r.Add(Grain)
	}
	return r
}
