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

// wait runs batches until Stop or the deadline: inside one RawConn.Read of
// the epoll descriptor, which parks the goroutine in the runtime poller
// whenever batches returns false, until the descriptor is readable (some
// registered descriptor has an event), something is posted, or the
// deadline passes.
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
func (l *Loop) wait() {
	err := l.eprc.Read(l.work)
	l.sleeping.Store(false)
	switch {
	case err == nil: // Stop
	case errors.Is(err, os.ErrDeadlineExceeded):
		// Read fails at once while the passed deadline stands, before
		// batches could run the timers that move it: clear it, and
		// batches sets the next one before it parks.
		_ = l.ep.SetReadDeadline(time.Time{})
		l.waitTo = time.Time{}
	default:
		// Only a closed descriptor fails here, which Run never does
		// while it waits; back off rather than spin.
		time.Sleep(Grain)
	}
}

// batches is the callback of wait's Read: it runs batches of events,
// posted functions and timers, and returns false to park the goroutine
// until the epoll descriptor is readable, true once Stop was called.
//
// Why one Read for many batches: Read begins by resetting the descriptor's
// readiness in the runtime poller, so a loop that called it for every wait
// had to ask epoll once more before parking, or lose an edge that came
// while it worked; after every batch that found the loop idle that asking
// was one epoll_wait that returned nothing. Within one Read nothing resets
// it: the poller's wait after a false return takes an edge that came since
// the loop's last epoll_wait, or parks until one comes, and every event of
// a registered descriptor after that epoll_wait makes one, since an epoll
// instance wakes those polling it on each of its callbacks (epoll(7): "The
// epoll file descriptor itself is pollable"). An edge that came before the
// last epoll_wait costs one epoll_wait that returns nothing.
//
// After a batch of two or more events, more likely came while it ran, and
// one epoll_wait takes them without a park and a wake-up. After a batch of
// one, either can be cheaper: asking costs one epoll_wait, which finds
// events when the loop's peers run beside it on other cores; parking at
// once saves the epoll_wait that would have found nothing when they do
// not, but costs the runtime's own epoll_wait before it parks a thread
// when events were there after all. So the loop asks while asking has
// mostly found events lately (ask), and parks at once otherwise, the way
// HAProxy's loop sleeps in its next epoll_wait.
func (l *Loop) batches(uintptr) bool {
	l.sleeping.Store(false)
	asked := false
	for {
		n := l.poll(l.events)
		if asked {
			l.learn(n > 0)
			asked = false
		}
		if n > 0 || l.queued.Load() != 0 || l.due() {
			l.now = time.Now()
			for i := range n {
				l.dispatch(&l.events[i])
			}
			l.drainInbox()
			l.next = l.timers(l.now)
			if l.stop {
				return true
			}
			// A deadline timers returned at or before the batch's own
			// clock is due at once; one later is set as the read deadline.
			if n >= 2 || (!l.next.IsZero() && !l.next.After(l.now)) {
				continue
			}
			if n == 1 && l.ask() {
				asked = true
				continue
			}
		}
		if deadline := roundUp(l.next); !deadline.Equal(l.waitTo) {
			_ = l.ep.SetReadDeadline(deadline)
			l.waitTo = deadline
		}
		// Post writes the eventfd only when it sees sleeping; the last
		// look at queued comes after sleeping is set (post.go).
		l.sleeping.Store(true)
		if l.queued.Load() == 0 {
			return false
		}
		l.sleeping.Store(false)
	}
}

// askProbe: while parking at once, one batch of one event in this many
// still asks, so that the loop notices when asking pays again.
const askProbe = 16

// ask reports whether to ask epoll again after a batch of one event: while
// the asking after such batches has found events more often than not
// lately, and on every askProbe-th such batch.
func (l *Loop) ask() bool {
	l.singles++
	return l.asks >= 0 || l.singles%askProbe == 0
}

// learn books the outcome of an ask: a saturating count, up for an
// epoll_wait that found events, down for one that found none.
func (l *Loop) learn(found bool) {
	if found {
		l.asks = min(l.asks+1, 3)
	} else {
		l.asks = max(l.asks-1, -4)
	}
}

// due reports whether the timers' deadline has passed: then the loop runs
// them again without sleeping.
func (l *Loop) due() bool { return !l.next.IsZero() && !l.next.After(time.Now()) }

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
