package sockmap

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// ErrNotEstablished is wrapped by Attach's and Splice's error when a socket
// is no longer in the ESTABLISHED state, typically because its peer has
// already sent its FIN: the kernel only admits established sockets to a
// sockhash. The connections are left as they were, for the userspace relay.
var ErrNotEstablished = errors.New("socket not established")

// Pair is one connection's two sockets in the kernel's hands.
//
// Attach gives the caller the lifecycle: it runs Copy once per direction,
// half-closes and closes the sockets itself, and calls Release. Splice does
// all that on the pair's own goroutines.
type Pair struct {
	r       *Relay
	sides   [2]side // 0: the first socket given (the client), 1: the second
	started uint64  // CLOCK_MONOTONIC at insertion

	released atomic.Bool
	splice   *spliced // set by Splice only
}

// side is one socket of a pair, and the direction it is the source of.
type side struct {
	sock
	cookie uint64
	base   uint64 // written() when the pair was inserted

	held      atomic.Bool   // its segments stay on it, for userspace (adoptStray)
	userBytes atomic.Uint64 // bytes relayed in userspace once held
	userLast  atomic.Uint64 // CLOCK_MONOTONIC of the last of those
}

// Attach hands client and upstream to the kernel. From its return on, each
// socket's incoming bytes are sent out of the other without passing through
// the process. The sockets stay the caller's: it must run Copy for each
// direction, do the half-closes and closes, and call Release when both
// Copy calls have returned.
//
// The caller must have written to each socket everything it owes it (the
// PROXY header, and any bytes it read from the other socket) before the
// call. Bytes already queued on either socket and not read are not lost:
// they go first.
//
// On error the connections are left as they were, still usable by a
// userspace relay.
func (r *Relay) Attach(client, upstream *net.TCPConn) (*Pair, error) {
	return r.attach(sock{conn: client}, sock{conn: upstream})
}

// AttachFD is Attach for bare socket descriptors, for a caller that runs
// its own event loop instead of Copy: it watches each socket for EOF
// (a read returns 0; data it reads is a stray segment, see AdoptStray),
// waits for Flushed before it half-closes the other socket, reads the
// counts with Moved, and calls Release. The descriptors stay the caller's.
func (r *Relay) AttachFD(client, upstream int) (*Pair, error) {
	return r.attach(sock{fd: client}, sock{fd: upstream})
}

func (r *Relay) attach(client, upstream sock) (*Pair, error) {
	p := &Pair{r: r}
	p.sides[0].sock, p.sides[1].sock = client, upstream
	for i := range p.sides {
		s := &p.sides[i]
		var err error
		if s.cookie, err = cookie(s.sock); err != nil {
			return nil, fmt.Errorf("sockmap: attach: %w", err)
		}
	}
	if err := r.add(p); err != nil {
		return nil, err
	}
	if err := p.insert(); err != nil {
		r.remove(p)
		return nil, fmt.Errorf("sockmap: attach: %w", err)
	}
	return p, nil
}

// insert puts both sockets in the maps. The verdict program must not see a
// segment of either before both are in: with one peer missing it would keep
// the segment on its own socket. So the receive low-water mark is raised
// first, which stops TCP from signalling data-ready (and so from running the
// program) for what arrives meanwhile, and lowered at the end, which
// signals it for everything queued, in order.
func (p *Pair) insert() (err error) {
	c, u := &p.sides[0], &p.sides[1]
	for _, s := range []*side{c, u} {
		if err := setLowat(s.sock, gateLowat); err != nil {
			return err
		}
	}
	defer func() {
		if err != nil {
			p.r.deleteEntries(c.cookie, u.cookie)
			_ = setLowat(c.sock, 1)
			_ = setLowat(u.sock, 1)
		}
	}()
	p.started = monoNow()
	for _, s := range []*side{c, u} {
		if s.base, err = written(s.sock); err != nil {
			return err
		}
		if err = p.r.counters.Update(s.cookie, counter{LastNs: p.started}, ebpf.UpdateNoExist); err != nil {
			return fmt.Errorf("counter for socket %d: %w", s.cookie, err)
		}
	}
	// peers[own cookie] = the socket to redirect to.
	for _, e := range []struct{ from, to *side }{{c, u}, {u, c}} {
		fd, err := socketFD(e.to.sock)
		if err != nil {
			return err
		}
		err = p.r.peers.Update(e.from.cookie, uint64(fd), ebpf.UpdateNoExist)
		if errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("sockhash insert: %w: %w", ErrNotEstablished, err)
		}
		if err != nil {
			return fmt.Errorf("sockhash insert: %w", err)
		}
	}
	for _, s := range []*side{c, u} {
		if err = setLowat(s.sock, 1); err != nil {
			return err
		}
	}
	return nil
}

// deleteEntries removes a pair's entries from both maps. A closed socket
// has already left the sockhash by itself; that is not an error.
func (r *Relay) deleteEntries(cookies ...uint64) {
	for _, k := range cookies {
		_ = r.peers.Delete(k)
		_ = r.counters.Delete(k)
		_ = r.hold.Delete(k)
	}
}

// Release removes the pair's entries from the maps and forgets it. The
// kernel stops relaying; call it once both directions are done, before or
// after closing the sockets. It is idempotent.
func (p *Pair) Release() {
	if p.released.Swap(true) {
		return
	}
	p.r.deleteEntries(p.sides[0].cookie, p.sides[1].cookie)
	p.r.remove(p)
}

// Counts returns the payload bytes relayed so far in each direction, by
// the kernel and, for a held direction, in userspace. After Release it
// returns zeros.
func (p *Pair) Counts() (toUpstream, toClient uint64) {
	return p.moved(0), p.moved(1)
}

// moved is what has been relayed from side i.
func (p *Pair) moved(i int) uint64 {
	var c counter
	if p.r.counters.Lookup(p.sides[i].cookie, &c) != nil {
		return 0
	}
	return c.Bytes + p.sides[i].userBytes.Load()
}

// lastActive is CLOCK_MONOTONIC of the last byte relayed either way, or of
// the insertion.
func (p *Pair) lastActive() (uint64, bool) {
	last := p.started
	for i := range p.sides {
		var c counter
		if err := p.r.counters.Lookup(p.sides[i].cookie, &c); err != nil {
			return 0, false
		}
		last = max(last, c.LastNs, p.sides[i].userLast.Load())
	}
	return last, true
}

// hold makes the program keep from's segments on its socket; the pair's
// reader takes over the direction when the first one arrives.
func (p *Pair) hold(from int) {
	src := &p.sides[from]
	if src.held.Swap(true) {
		return
	}
	if err := p.r.hold.Update(src.cookie, uint64(1), ebpf.UpdateAny); err != nil {
		p.end(ReasonError)
	}
}

// AdoptStray decides about data that reached userspace from side from, a
// direction that is not held. The program keeps a segment on its socket
// when the peer is not in the sockhash, which happens during the handover
// although the receive low-water mark holds segments back then: a FIN sets
// SOCK_DONE, and TCP signals data-ready for it whatever the mark, so a
// response and FIN arriving between the two insertions meet the program
// with the peer missing. Nothing can follow a FIN, so such data is safe to
// relay in userspace as long as nothing from this socket was redirected:
// the direction is held (so nothing will be), the socket's lock is taken
// once (so a program run in flight has finished) and the redirected count
// must still be zero. If AdoptStray returns false, bytes may already be out
// of order, and the connection must go. Once it returns true the caller
// relays the direction, after Flushed, with plain reads (the held segments
// are on the socket's BPF ingress queue, which splice(2) would bypass), and
// books each write with AddUserspace.
func (p *Pair) AdoptStray(from int) bool {
	src := &p.sides[from]
	p.hold(from)
	if _, err := written(src.sock); err != nil { // TCP_INFO locks the socket
		return false
	}
	var ctr counter
	if err := p.r.counters.Lookup(src.cookie, &ctr); err != nil {
		return false
	}
	return ctr.Bytes == 0
}

// Flushed reports whether the other socket has accepted every byte relayed
// from side from. The kernel sends redirected bytes from a work queue after
// the program returns, so the caller must wait for this before it
// half-closes the other socket (those late writes would fail) or writes to
// it in userspace (they would be reordered). An error means a socket was
// closed or the pair released.
func (p *Pair) Flushed(from int) (bool, error) {
	src, dst := &p.sides[from], &p.sides[1-from]
	var ctr counter
	if err := p.r.counters.Lookup(src.cookie, &ctr); err != nil {
		return false, err
	}
	w, err := written(dst.sock)
	if err != nil {
		return false, err
	}
	return w-dst.base >= ctr.Bytes+src.userBytes.Load(), nil
}

// AddUserspace books n bytes of side from's direction that the caller
// relayed in userspace (a held direction), for Moved and the idle clock.
func (p *Pair) AddUserspace(from, n int) {
	p.sides[from].userBytes.Add(uint64(n))
	p.sides[from].userLast.Store(monoNow())
}

// Moved is what has been relayed from side from (0: the client, 1: the
// upstream), by the kernel and in userspace; 0 after Release.
func (p *Pair) Moved(from int) uint64 { return p.moved(from) }
