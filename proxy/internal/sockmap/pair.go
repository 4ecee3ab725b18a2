package sockmap

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Why a pair ended: the values the proxy uses for
// hairpin_proxy_connections_closed_total{reason}.
const (
	ReasonEOF   = "eof"   // both directions ended with EOF, forwarded as half-closes
	ReasonError = "error" // a socket failed or was reset, or data reached userspace
	ReasonIdle  = "idle"  // no byte in either direction for the idle timeout
	ReasonDrain = "drain" // Relay.Close ended it
)

// ReasonClosed is the reason Relay.Close gives the pairs it aborts.
const ReasonClosed = ReasonDrain

// ErrNotEstablished is wrapped by Splice's error when a socket is no longer
// in the ESTABLISHED state, typically because its peer has already sent its
// FIN: the kernel only admits established sockets to a sockhash. The
// connections are left as they were, for the userspace relay.
var ErrNotEstablished = errors.New("socket not established")

// Result is what a pair did.
type Result struct {
	Reason     string  // one of the Reason constants, or what Abort was given
	ToUpstream uint64  // payload bytes moved client -> upstream
	ToClient   uint64  // payload bytes moved upstream -> client
	Held       [2]bool // per direction (client's, upstream's): relayed in userspace after a hold
}

// Pair is one client/upstream connection relayed by the kernel.
type Pair struct {
	r       *Relay
	idle    time.Duration
	sides   [2]side // 0: client (its bytes go up), 1: upstream
	started uint64  // CLOCK_MONOTONIC at Splice

	mu     sync.Mutex
	eofs   int // directions that ended with a forwarded EOF
	timer  *time.Timer
	ended  bool
	result Result
	done   chan struct{}
}

// side is one socket of a pair, and the direction it is the source of.
type side struct {
	conn   *net.TCPConn
	cookie uint64
	base   uint64 // written() when the pair was inserted

	held      atomic.Bool   // its segments stay on it, for userspace (flow.go)
	seen      uint64        // redirected count at the last sweep; the sweeper's
	userBytes atomic.Uint64 // bytes relayed in userspace once held
	userLast  atomic.Uint64 // CLOCK_MONOTONIC of the last of those
}

// Splice hands client and upstream to the kernel. From its return on, each
// socket's incoming bytes are sent out of the other without passing through
// the process, until both directions have ended or the pair is aborted.
// Both connections belong to the pair then: it closes them when it ends.
//
// The caller must have written to each socket everything it owes it (the
// PROXY header, and any bytes it read from the other socket) before the
// call. Bytes already queued on either socket and not read are not lost:
// they go first.
//
// idle, if positive, aborts the pair after that long without a byte in
// either direction.
//
// On error the connections are left as they were, still usable by a
// userspace relay.
func (r *Relay) Splice(client, upstream *net.TCPConn, idle time.Duration) (*Pair, error) {
	p := &Pair{r: r, idle: idle, done: make(chan struct{})}
	p.sides[0].conn, p.sides[1].conn = client, upstream
	for i := range p.sides {
		s := &p.sides[i]
		var err error
		if s.cookie, err = cookie(s.conn); err != nil {
			return nil, fmt.Errorf("sockmap: splice: %w", err)
		}
	}
	if err := r.add(p); err != nil {
		return nil, err
	}
	if err := p.insert(); err != nil {
		r.remove(p)
		return nil, fmt.Errorf("sockmap: splice: %w", err)
	}
	if idle > 0 {
		p.mu.Lock()
		p.timer = time.AfterFunc(idle, p.checkIdle)
		p.mu.Unlock()
	}
	go p.watch(0)
	go p.watch(1)
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

// watch waits for the end of one direction: src's EOF, forwarded as a
// half-close of dst once the kernel has written all it redirected.
// Unless the direction is held, the program takes every segment, so the
// read returns nothing but EOF or an error; data then means the peer was
// missing from the map, and forwarding it could reorder the stream, so the
// pair is aborted.
func (p *Pair) watch(from int) {
	src, dst := &p.sides[from], &p.sides[1-from]
	var b [512]byte
	n, err := src.conn.Read(b[:])
	if n > 0 {
		if !src.held.Load() {
			p.end(ReasonError)
			return
		}
		err = p.relay(src, dst, b[:n])
	}
	if !errors.Is(err, io.EOF) {
		p.end(ReasonError)
		return
	}
	if !p.flushed(src, dst) {
		return // ended meanwhile
	}
	if err := dst.conn.CloseWrite(); err != nil {
		p.end(ReasonError)
		return
	}
	p.mu.Lock()
	p.eofs++
	both := p.eofs == 2
	p.mu.Unlock()
	if both {
		p.end(ReasonEOF)
	}
}

// relay moves a held direction in userspace, starting with first, until
// src's EOF (returned as io.EOF) or an error. It begins once dst has
// accepted every byte the program redirected before the hold, so nothing
// is reordered. Plain reads: the held segments are on the socket's BPF
// ingress queue, which splice(2) would bypass.
func (p *Pair) relay(src, dst *side, first []byte) error {
	if !p.flushed(src, dst) {
		return net.ErrClosed
	}
	buf := make([]byte, 64<<10)
	b := first
	for {
		if _, err := dst.conn.Write(b); err != nil {
			return err
		}
		src.userBytes.Add(uint64(len(b)))
		src.userLast.Store(monoNow())
		n, err := src.conn.Read(buf)
		if err != nil {
			return err
		}
		b = buf[:n]
	}
}

// flushed waits until dst has accepted every byte the program redirected
// from src, which the kernel sends from a work queue after the program
// returns. Shutting dst down before that would make the kernel's late writes
// fail. It returns false when the pair ended first.
func (p *Pair) flushed(src, dst *side) bool {
	wait := 50 * time.Microsecond
	for {
		var c counter
		if err := p.r.counters.Lookup(src.cookie, &c); err != nil {
			p.end(ReasonError)
			return false
		}
		w, err := written(dst.conn)
		if err != nil {
			p.end(ReasonError)
			return false
		}
		if w-dst.base >= c.Bytes {
			return true
		}
		select {
		case <-p.done:
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Millisecond)
	}
}

// checkIdle runs from the idle timer: it ends the pair if neither socket
// has had a byte redirected for the idle timeout, and otherwise sets the
// timer for when that would next be true.
func (p *Pair) checkIdle() {
	last := p.started
	for i := range p.sides {
		var c counter
		if err := p.r.counters.Lookup(p.sides[i].cookie, &c); err != nil {
			return // ended
		}
		last = max(last, c.LastNs, p.sides[i].userLast.Load())
	}
	quiet := monoSince(last)
	if quiet >= p.idle {
		p.end(ReasonIdle)
		return
	}
	p.mu.Lock()
	if !p.ended {
		p.timer.Reset(p.idle - quiet)
	}
	p.mu.Unlock()
}

// Abort ends the pair now, closing both connections; Wait then reports
// reason. It does nothing if the pair has already ended.
func (p *Pair) Abort(reason string) { p.end(reason) }

// end finishes the pair once: the map entries go, the counts are read, both
// connections are closed, which also unblocks the watchers.
func (p *Pair) end(reason string) {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.ended = true
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()

	toUp, toCli := p.Counts()
	held := [2]bool{p.sides[0].held.Load(), p.sides[1].held.Load()}
	p.r.deleteEntries(p.sides[0].cookie, p.sides[1].cookie)
	_ = p.sides[0].conn.Close()
	_ = p.sides[1].conn.Close()
	p.r.remove(p)

	p.mu.Lock()
	p.result = Result{Reason: reason, ToUpstream: toUp, ToClient: toCli, Held: held}
	p.mu.Unlock()
	close(p.done)
}

// Counts returns the payload bytes relayed so far in each direction, by
// the kernel and, for a held direction, in userspace. After the pair has ended it returns zeros; use Wait's Result.
func (p *Pair) Counts() (toUpstream, toClient uint64) {
	var n [2]uint64
	for i := range p.sides {
		var c counter
		if p.r.counters.Lookup(p.sides[i].cookie, &c) == nil {
			n[i] = c.Bytes + p.sides[i].userBytes.Load()
		}
	}
	return n[0], n[1]
}

// Done is closed when the pair has ended and both connections are closed.
func (p *Pair) Done() <-chan struct{} { return p.done }

// Wait blocks until the pair has ended and returns what it did.
func (p *Pair) Wait() Result {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.result
}
