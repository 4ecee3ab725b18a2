package evloop

import (
	"os"

	"golang.org/x/sys/unix"
)

// Handler receives the events of one registered descriptor, on the loop's
// goroutine: the epoll event mask (EPOLLIN, EPOLLOUT, EPOLLRDHUP, ...).
type Handler interface {
	Event(events uint32)
}

// Reg is one registration, for Modify and Remove. The zero Reg is none:
// generations start at 1.
type Reg struct{ t token }

// slot is one entry of the handler table.
type slot struct {
	h   Handler // nil while free
	gen uint32  // bumped on every release, never 0
}

// Add registers fd for events, delivered to h until Remove. Only the loop's
// goroutine may call it once Run has started.
func (l *Loop) Add(fd int, events uint32, h Handler) (Reg, error) {
	var n uint32
	if k := len(l.free); k > 0 {
		n = l.free[k-1]
		l.free = l.free[:k-1]
	} else {
		n = uint32(len(l.slots))
		l.slots = append(l.slots, slot{gen: 1})
	}
	s := &l.slots[n]
	s.h = h
	t := makeToken(n, s.gen)
	if err := l.ctl(unix.EPOLL_CTL_ADD, fd, events, t); err != nil {
		l.release(n)
		return Reg{}, err
	}
	return Reg{t}, nil
}

// Modify changes the events fd is registered for under r.
func (l *Loop) Modify(r Reg, fd int, events uint32) error {
	return l.ctl(unix.EPOLL_CTL_MOD, fd, events, r.t)
}

// Remove ends r: its handler receives no further event, not even one
// already returned in the current batch. Unless fd is negative it is also
// taken out of the epoll set. A socket about to be closed need not be:
// epoll(7), "closing a file descriptor cause[s] it to be removed from all
// epoll interest lists" once it is the last descriptor of its open file
// (a dup(2) keeps the registration alive).
func (l *Loop) Remove(r Reg, fd int) error {
	n := r.t.slot()
	if int(n) >= len(l.slots) || l.slots[n].gen != r.t.gen() || l.slots[n].h == nil {
		return nil
	}
	l.release(n)
	if fd < 0 {
		return nil
	}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, fd, nil); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

func (l *Loop) release(n uint32) {
	s := &l.slots[n]
	s.h = nil
	if s.gen++; s.gen == 0 {
		s.gen = 1
	}
	l.free = append(l.free, n)
}

// dispatch hands one event to its handler, unless its registration is gone.
func (l *Loop) dispatch(ev *unix.EpollEvent) {
	t := eventToken(ev)
	if t == wakeToken {
		l.drainWake()
		return
	}
	if n := t.slot(); int(n) < len(l.slots) {
		if s := &l.slots[n]; s.gen == t.gen() && s.h != nil {
			s.h.Event(ev.Events)
		}
	}
}

func (l *Loop) ctl(op, fd int, events uint32, t token) error {
	ev := unix.EpollEvent{Events: events}
	t.put(&ev)
	if err := unix.EpollCtl(l.epfd, op, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}
