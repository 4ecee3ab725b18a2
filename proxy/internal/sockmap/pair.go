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
	conn   *net.TCPConn
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
	p := &Pair{r: r}
	p.sides[0].conn, p.sides[1].conn = client, upstream
	for i := range p.sides {
		s := &p.sides[i]
		var err error
		if s.cookie, err = cookie(s.conn); err != nil {
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
		if err := setLowat(s.conn, gateLowat); err != nil {
			return err
		}
	}
	defer func() {
		if err != nil {
			p.r.deleteEntries(c.cookie, u.cookie)
			_ = setLowat(c.conn, 1)
			_ = setLowat(u.conn, 1)
		}
	}()
	p.started = monoNow()
	for _, s := range []*side{c, u} {
		if s.base, err = written(s.conn); err != nil {
			return err
		}
		if err = p.r.counters.Update(s.cookie, counter{LastNs: p.started}, ebpf.UpdateNoExist); err != nil {
			return fmt.Errorf("counter for socket %d: %w", s.cookie, err)
		}
	}
	// peers[own cookie] = the socket to redirect to.
	for _, e := range []struct{ from, to *side }{{c, u}, {u, c}} {
		fd, err := socketFD(e.to.conn)
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
		if err = setLowat(s.conn, 1); err != nil {
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
