package proxy

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// loop is one event loop of the default relay. Its goroutine accepts,
// dials, writes the PROXY header and moves bytes for the connections it
// owns, all with non-blocking system calls on one epoll instance, the way
// HAProxy's threads work. A connection costs no goroutine and, while idle,
// no buffer: a small struct and its kernel sockets.
//
// Why not a goroutine per direction: every small exchange then costs a
// read, a write and a read that returns EAGAIN (the runtime poller resets
// readiness on every RawConn.Read, so the last read cannot be skipped), plus
// a goroutine park and wake-up. Here readiness is edge-triggered and a
// short read means the socket is drained (see flow.fill), so an exchange is
// one read and one write, and one epoll_wait serves many of them.
//
// Everything a loop owns is touched only by its goroutine; other
// goroutines reach it through post, which queues a function and wakes the
// loop through an eventfd.
type loop struct {
	srv    *Server
	epfd   int
	ep     *os.File        // epfd, registered with the runtime poller
	eprc   syscall.RawConn // ep's, to wait without a blocking system call
	wakefd int
	waitTo time.Time // ep's read deadline as last set

	slots []*loopConn // epoll data → connection; nil is free
	free  []int32     // free slot numbers
	freed []int32     // slots of connections closed in this batch

	listeners []*loopListener

	tick     time.Duration
	nextTick time.Time
	dialing  map[*loopConn]struct{} // connections waiting for connect
	now      time.Time              // the clock, read once per batch

	mu       sync.Mutex
	inbox    []func()
	queued   atomic.Int32
	sleeping atomic.Bool
	exited   bool          // under mu: run has returned, post refuses
	done     chan struct{} // closed when run returns
	stop     bool          // set by the stop command
}

// Event kinds, in the high half of the epoll data; the low half is a slot
// or listener number.
const (
	evWake int32 = iota
	evListener
	evClient
	evUpstream
)

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

// epollBatch is how many events one epoll_wait returns at most.
const epollBatch = 256

// connEvents is the interest set of a relayed socket, registered once:
// edge-triggered, so no epoll_ctl is needed to pause or resume a direction.
// EPOLLPRI: TCP urgent data, after which a read stops short at the mark.
const connEvents = unix.EPOLLIN | unix.EPOLLPRI | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET

func newLoop(s *Server) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	// An epoll descriptor is itself pollable (readable while it holds
	// events), so the runtime poller can park the loop's goroutine on it.
	// The loop never blocks in epoll_wait: a goroutine blocked in a system
	// call makes sysmon hand its P to another thread every 20 µs, which
	// costs more than the relaying it interrupts.
	if err := unix.SetNonblock(epfd, true); err != nil {
		_ = unix.Close(epfd)
		_ = unix.Close(wakefd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	ep := os.NewFile(uintptr(epfd), "epoll")
	eprc, err := ep.SyscallConn()
	if err != nil {
		_ = ep.Close()
		_ = unix.Close(wakefd)
		return nil, fmt.Errorf("epoll: %w", err)
	}
	l := &loop{
		srv: s, epfd: epfd, ep: ep, eprc: eprc, wakefd: wakefd,
		tick:    relayTick(s.cfg.IdleTimeout),
		dialing: map[*loopConn]struct{}{},
		done:    make(chan struct{}),
	}
	if err := l.ctl(unix.EPOLL_CTL_ADD, wakefd, unix.EPOLLIN, evWake, 0); err != nil {
		l.closeFDs()
		return nil, err
	}
	return l, nil
}

// ctl registers or changes fd with its kind and number as epoll data.
func (l *loop) ctl(op, fd int, events uint32, kind, n int32) error {
	ev := unix.EpollEvent{Events: events, Fd: n, Pad: kind}
	if err := unix.EpollCtl(l.epfd, op, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

func (l *loop) closeFDs() {
	_ = unix.Close(l.wakefd)
	_ = l.ep.Close()
}

// post runs fn on the loop's goroutine, and reports false if the loop has
// exited (fn will never run). The eventfd is written only when the loop
// sleeps, or is about to: it sets sleeping before its last look at the
// inbox, so a function queued after that look always sees it set.
func (l *loop) post(fn func()) bool {
	l.mu.Lock()
	if l.exited {
		l.mu.Unlock()
		return false
	}
	l.inbox = append(l.inbox, fn)
	l.mu.Unlock()
	l.queued.Add(1)
	if l.sleeping.Load() {
		var one = [8]byte{1}
		_, _ = unix.Write(l.wakefd, one[:])
	}
	return true
}

// call runs fn on the loop and waits for it; it returns false if the loop
// has already stopped.
func (l *loop) call(fn func()) bool {
	ran := make(chan struct{})
	if !l.post(func() { fn(); close(ran) }) {
		return false
	}
	select {
	case <-ran:
		return true
	case <-l.done:
		return false
	}
}

func (l *loop) drainInbox() {
	if l.queued.Load() == 0 {
		return
	}
	l.mu.Lock()
	fns := l.inbox
	l.inbox = nil
	l.queued.Store(0)
	l.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// run is the loop's goroutine. It returns after the stop command, once its
// listeners and connections are gone.
func (l *loop) run() {
	defer close(l.done)
	defer l.closeFDs()
	defer func() {
		// What was queued last (an external dial's result for a
		// connection already closed) still runs: it closes its socket.
		l.mu.Lock()
		l.exited = true
		fns := l.inbox
		l.inbox = nil
		l.mu.Unlock()
		for _, fn := range fns {
			fn()
		}
	}()
	events := make([]unix.EpollEvent, epollBatch)
	l.now = time.Now()
	l.nextTick = l.now.Add(l.tick)
	for !l.stop {
		n := l.wait(events)
		l.now = time.Now()
		for i := range max(n, 0) {
			l.handle(events[i])
		}
		l.drainInbox()
		l.timers()
		l.releaseSlots()
	}
}

// wait returns the next batch of events. With none ready it parks in the
// runtime poller until there are, something is posted, or the next timer
// is due.
func (l *loop) wait(events []unix.EpollEvent) int {
	deadline := l.deadline()
	if l.queued.Load() != 0 || !deadline.After(time.Now()) {
		return l.poll(events)
	}
	if !deadline.Equal(l.waitTo) {
		_ = l.ep.SetReadDeadline(deadline)
		l.waitTo = deadline
	}
	n := 0
	l.sleeping.Store(true)
	err := l.eprc.Read(func(uintptr) bool {
		n = l.poll(events)
		return n > 0 || l.queued.Load() != 0
	})
	l.sleeping.Store(false)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		l.srv.log.Error("event loop: waiting for events failed", "err", err)
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

// poll is a non-blocking epoll_wait.
func (l *loop) poll(events []unix.EpollEvent) int {
	n, err := unix.EpollWait(l.epfd, events, 0)
	if err != nil {
		return 0 // EINTR; nothing else is possible on a valid epoll fd
	}
	return n
}

// deadlineGrain rounds the wait's deadline up, so that a stream of
// connections dialling does not reset the poller's timer on every wait; a
// dial timeout fires at most this late.
const deadlineGrain = 10 * time.Millisecond

// deadline is when the loop must wake even without events: the next
// tick, dial deadline or listener resume.
func (l *loop) deadline() time.Time {
	next := l.nextTick
	for c := range l.dialing {
		if c.dialDeadline.Before(next) {
			next = c.dialDeadline
		}
	}
	for _, li := range l.listeners {
		if !li.resume.IsZero() && li.resume.Before(next) {
			next = li.resume
		}
	}
	r := next.Round(deadlineGrain)
	if r.Before(next) {
		r = r.Add(deadlineGrain)
	}
	return r
}

func (l *loop) handle(ev unix.EpollEvent) {
	switch ev.Pad {
	case evWake:
		var b [8]byte
		_, _ = unix.Read(l.wakefd, b[:])
	case evListener:
		if int(ev.Fd) < len(l.listeners) {
			l.accept(l.listeners[ev.Fd])
		}
	case evClient, evUpstream:
		if int(ev.Fd) < len(l.slots) {
			if c := l.slots[ev.Fd]; c != nil {
				c.event(ev.Pad == evUpstream, ev.Events)
			}
		}
	}
}

// timers runs what is due: dial deadlines every batch (few connections
// dial at once), the relay clock every tick, listener resumes.
func (l *loop) timers() {
	for c := range l.dialing {
		if !l.now.Before(c.dialDeadline) {
			c.dialTimedOut()
		}
	}
	for _, li := range l.listeners {
		if !li.resume.IsZero() && !l.now.Before(li.resume) {
			li.resume = time.Time{}
			_ = l.listen(li)
		}
	}
	if l.now.Before(l.nextTick) {
		return
	}
	l.nextTick = l.now.Add(l.tick)
	for _, c := range l.slots {
		if c != nil {
			c.onTick(l.now)
		}
	}
}

// addSlot gives c a slot number, the epoll data of its sockets.
func (l *loop) addSlot(c *loopConn) {
	if n := len(l.free); n > 0 {
		c.slot = l.free[n-1]
		l.free = l.free[:n-1]
		l.slots[c.slot] = c
	} else {
		c.slot = int32(len(l.slots))
		l.slots = append(l.slots, c)
	}
}

// dropSlot frees c's slot at the end of the batch, so an event of the same
// batch for a closed connection cannot reach a new one.
func (l *loop) dropSlot(c *loopConn) {
	l.slots[c.slot] = nil
	l.freed = append(l.freed, c.slot)
}

func (l *loop) releaseSlots() {
	l.free = append(l.free, l.freed...)
	l.freed = l.freed[:0]
}

// abortAll closes every connection of the loop with reason and returns
// how many there were.
func (l *loop) abortAll(reason string) int {
	n := 0
	for _, c := range l.slots {
		if c != nil {
			c.finish(reason)
			n++
		}
	}
	return n
}
