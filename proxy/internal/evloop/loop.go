package evloop

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Batch is how many events one epoll_wait returns at most.
const Batch = 256

// Loop is one event loop. Everything registered with it is touched only by
// the goroutine that runs it; other goroutines reach that goroutine with
// Post and Call.
type Loop struct {
	epfd   int
	ep     *os.File        // epfd, registered with the runtime poller
	eprc   syscall.RawConn // ep's, to wait without a blocking system call
	wakefd int
	waitTo time.Time // ep's read deadline as last set

	// The current wait's (wait.go): where it polls, what it got, and
	// pollReady as a method value, made once.
	events []unix.EpollEvent
	got    int
	ready  func(uintptr) bool

	slots []slot   // token slot → handler
	free  []uint32 // free slot numbers

	now  time.Time // the clock, read once per batch
	stop bool

	mu       sync.Mutex
	inbox    []func()
	queued   atomic.Int32
	sleeping atomic.Bool
	exited   bool          // under mu: Run has returned, Post refuses
	done     chan struct{} // closed when Run returns
}

// New makes a loop: an epoll instance and the eventfd that Post writes to
// wake it.
func New() (*Loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	// epoll(7): "The epoll file descriptor itself is pollable: it is
	// readable while it holds ready events", so the runtime poller can park
	// the loop's goroutine on it (wait.go).
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
	l := &Loop{epfd: epfd, ep: ep, eprc: eprc, wakefd: wakefd, done: make(chan struct{})}
	l.ready = l.pollReady
	if err := l.ctl(unix.EPOLL_CTL_ADD, wakefd, unix.EPOLLIN, wakeToken); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Close frees a loop that never ran; Run frees its own on return.
func (l *Loop) Close() {
	_ = unix.Close(l.wakefd)
	_ = l.ep.Close()
}

// Run runs the loop on the calling goroutine until Stop. After every batch
// of events and posted functions it calls timers with the batch's clock:
// timers runs what is due and returns when the loop must next wake without
// events (the zero time: not before an event).
//
// Functions posted after Run began to return still run, before it returns.
func (l *Loop) Run(timers func(now time.Time) time.Time) {
	defer close(l.done)
	defer l.Close()
	defer l.exit()
	events := make([]unix.EpollEvent, Batch)
	l.now = time.Now()
	next := timers(l.now)
	for !l.stop {
		n := l.wait(events, l.now, next)
		l.now = time.Now()
		for i := range n {
			l.dispatch(&events[i])
		}
		l.drainInbox()
		next = timers(l.now)
	}
}

// exit makes Post refuse, then runs what was queued before it did: a
// goroutine's result for something already gone still gets to clean up.
func (l *Loop) exit() {
	l.mu.Lock()
	l.exited = true
	fns := l.inbox
	l.inbox = nil
	l.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Stop makes Run return after the current batch. Only the loop's goroutine
// may call it (from a Handler, timers or a posted function).
func (l *Loop) Stop() { l.stop = true }

// Now is the clock of the current batch.
func (l *Loop) Now() time.Time { return l.now }

// Done is closed when Run has returned.
func (l *Loop) Done() <-chan struct{} { return l.done }
