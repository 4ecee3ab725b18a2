package evloop

import "golang.org/x/sys/unix"

// token is what one registration puts in epoll_data: its slot in the
// handler table (low 32 bits) and the slot's generation when it was
// registered (high 32 bits). A slot is reused with the next generation, so
// an event still queued for a removed registration, in the same batch or a
// later one, names a generation the slot no longer has and is dropped.
//
// epoll_ctl(2): "The data member of the epoll_event structure specifies
// data that the kernel should save and then return (via epoll_wait(2)) when
// this file descriptor becomes ready." It is a 64-bit union; x/sys/unix
// spells it as two int32 fields, Fd and Pad, on every Linux architecture,
// and this file is the only place that writes or reads them.
type token uint64

func makeToken(slot, gen uint32) token { return token(gen)<<32 | token(slot) }

func (t token) slot() uint32 { return uint32(t) }
func (t token) gen() uint32  { return uint32(t >> 32) }

// wakeToken marks the loop's own eventfd; no slot has this number.
const wakeToken = token(1<<64 - 1)

func (t token) put(ev *unix.EpollEvent) {
	ev.Fd = int32(uint32(t))
	ev.Pad = int32(uint32(t >> 32))
}

func eventToken(ev *unix.EpollEvent) token {
	return token(uint32(ev.Pad))<<32 | token(uint32(ev.Fd))
}
