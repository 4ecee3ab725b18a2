package evloop

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Post runs fn on the loop's goroutine, after the current batch of events,
// and reports false if the loop has exited (fn will never run).
//
// The eventfd is written only when the loop sleeps, or is about to: the loop
// sets sleeping before its last look at queued, and Post adds to queued
// before it looks at sleeping, so one of the two always sees the other
// (both are sequentially consistent atomics).
func (l *Loop) Post(fn func()) bool {
	l.mu.Lock()
	if l.exited {
		l.mu.Unlock()
		return false
	}
	l.inbox = append(l.inbox, fn)
	l.mu.Unlock()
	l.queued.Add(1)
	if l.sleeping.Load() {
		l.wake()
	}
	return true
}

// Call runs fn on the loop and waits for it; it returns false if the loop
// has exited before fn ran.
func (l *Loop) Call(fn func()) bool {
	ran := make(chan struct{})
	if !l.Post(func() { fn(); close(ran) }) {
		return false
	}
	select {
	case <-ran:
		return true
	case <-l.done:
		return false
	}
}

// wake makes the eventfd readable. eventfd(2): a write "adds the 8-byte
// integer value supplied in its buffer to the counter"; EAGAIN, a counter
// about to overflow, means it is readable already.
func (l *Loop) wake() {
	one := [8]byte{1}
	_, _ = unix.Write(l.wakefd, one[:])
}

// drainWake resets the eventfd: a read returns the counter and sets it to
// 0. Raw, like the loop's other calls (wait.go): it never blocks.
func (l *Loop) drainWake() {
	var b [8]byte
	_, _, _ = syscall.RawSyscall(syscall.SYS_READ, uintptr(l.wakefd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
}

// drainInbox runs what was posted, in order.
func (l *Loop) drainInbox() {
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
