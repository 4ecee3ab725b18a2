package evloop

import (
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawWait caps a wait the runtime does not see (waitRaw). It bounds how long
// the runtime may have to wait for the loop's goroutine to stop, as a
// garbage collection must, and how long the loop holds its P with nothing to
// do before it lets the runtime take it.
const rawWait = 5 * time.Millisecond

// wait returns the next batch of events, blocking in epoll_wait on the
// loop's own thread (Run locks it) until there are, something is posted, or
// next passes.
//
// A busy loop blocks with a raw system call, as HAProxy's threads do: the
// kernel wakes the thread itself, and it keeps its P. Parking in the
// runtime poller instead (the epoll descriptor is pollable) costs a second
// epoll_wait and a wake-up of the runtime's poller thread per batch, and
// the runtime's scheduler and sysmon then wake on every idle-to-busy turn;
// an ordinary blocking call costs entersyscall and exitsyscall, and sysmon
// takes the P away while the call lasts. Measured under keep-alive load,
// CPU per request fell by about a fifth, to HAProxy's.
//
// A raw wait that times out found the loop idle: from then on it waits with
// an ordinary blocking call, for as long as next allows. The runtime sees
// that one: sysmon hands the P to other goroutines, and an idle loop costs
// nothing until an event or the deadline.
func (l *Loop) wait(events []unix.EpollEvent, next time.Time) int {
	ms := -1 // no deadline
	if !next.IsZero() {
		d := time.Until(next)
		if d <= 0 {
			return l.poll(events)
		}
		ms = int((d + time.Millisecond - 1) / time.Millisecond)
	}
	l.sleeping.Store(true)
	defer l.sleeping.Store(false)
	if l.queued.Load() != 0 {
		return l.poll(events)
	}
	if l.idle {
		n, err := unix.EpollWait(l.epfd, events, ms)
		if err != nil {
			return 0 // EINTR; nothing else is possible on a valid epoll fd
		}
		l.idle = n == 0 && ms >= 0
		return n
	}
	raw := int(rawWait / time.Millisecond)
	if ms >= 0 && ms < raw {
		raw = ms
	}
	n, err := waitRaw(l.epfd, events, raw)
	if err != nil {
		return 0
	}
	l.idle = n == 0 && raw != ms
	return n
}

// waitRaw is epoll_wait(2) as a raw system call: the runtime does not know
// the goroutine blocks. A signal (the runtime's preemption request, SIGURG)
// interrupts it: epoll_wait "is never restarted after being interrupted by
// a signal handler" (signal(7)), so it returns EINTR.
func waitRaw(epfd int, events []unix.EpollEvent, ms int) (int, error) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd),
		uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(ms), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// poll is a non-blocking epoll_wait.
func (l *Loop) poll(events []unix.EpollEvent) int {
	n, err := waitRaw(l.epfd, events, 0)
	if err != nil {
		return 0
	}
	return n
}
