package sockmap

import (
	"net"
	"sync"
	"time"
)

// Why a spliced pair ended: the values the proxy uses for
// hairpin_proxy_connections_closed_total{reason}.
const (
	ReasonEOF   = "eof"   // both directions ended with EOF, forwarded as half-closes
	ReasonError = "error" // a socket failed or was reset, or data reached userspace
	ReasonIdle  = "idle"  // no byte in either direction for the idle timeout
	ReasonDrain = "drain" // Relay.Close ended it
)

// ReasonClosed is the reason Relay.Close gives the pairs it aborts.
const ReasonClosed = ReasonDrain

// Result is what a spliced pair did.
type Result struct {
	Reason     string  // one of the Reason constants, or what Abort was given
	ToUpstream uint64  // payload bytes moved client -> upstream
	ToClient   uint64  // payload bytes moved upstream -> client
	Held       [2]bool // per direction (client's, upstream's): relayed in userspace after a hold
}

// spliced is the lifecycle Splice runs for a pair.
type spliced struct {
	idle time.Duration

	mu     sync.Mutex
	eofs   int // directions that ended with a forwarded EOF
	timer  *time.Timer
	ended  bool
	result Result
	done   chan struct{}
}

// Splice is Attach plus the whole lifecycle: the pair forwards each EOF as a
// half-close, ends when both directions have, on an error, after idle (if
// positive) without a byte in either direction, or on Abort, and then
// closes both connections and releases itself. Wait reports the outcome.
func (r *Relay) Splice(client, upstream *net.TCPConn, idle time.Duration) (*Pair, error) {
	p, err := r.Attach(client, upstream)
	if err != nil {
		return nil, err
	}
	s := &spliced{idle: idle, done: make(chan struct{})}
	p.splice = s
	if idle > 0 {
		s.mu.Lock()
		s.timer = time.AfterFunc(idle, p.checkIdle)
		s.mu.Unlock()
	}
	go p.direction(0)
	go p.direction(1)
	return p, nil
}

// direction runs Copy for the direction from side from and half-closes the
// other side at its EOF.
func (p *Pair) direction(from int) {
	if err := p.Copy(p.sides[from].conn, nil, 0); err != nil {
		p.end(ReasonError)
		return
	}
	if err := p.sides[1-from].conn.CloseWrite(); err != nil {
		p.end(ReasonError)
		return
	}
	s := p.splice
	s.mu.Lock()
	s.eofs++
	both := s.eofs == 2
	s.mu.Unlock()
	if both {
		p.end(ReasonEOF)
	}
}

// checkIdle runs from the idle timer: it ends the pair if neither socket
// has relayed a byte for the idle timeout, and otherwise sets the timer for
// when that would next be true.
func (p *Pair) checkIdle() {
	s := p.splice
	last, ok := p.lastActive()
	if !ok {
		return // released
	}
	quiet := monoSince(last)
	if quiet >= s.idle {
		p.end(ReasonIdle)
		return
	}
	s.mu.Lock()
	if !s.ended {
		s.timer.Reset(s.idle - quiet)
	}
	s.mu.Unlock()
}

// Abort ends the pair now, closing both connections; Wait then reports
// reason. It does nothing if the pair has already ended. For an attached
// pair (not spliced) it closes both connections and releases the pair.
func (p *Pair) Abort(reason string) { p.end(reason) }

// end finishes the pair once: the counts are read, both connections are
// closed, which also unblocks the directions, and the entries go.
func (p *Pair) end(reason string) {
	s := p.splice
	if s == nil {
		// An attached pair: its sockets are the caller's; for AttachFD
		// there is no conn to close, only the entries to drop.
		for i := range p.sides {
			if c := p.sides[i].conn; c != nil {
				_ = c.Close()
			}
		}
		p.Release()
		return
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()

	toUp, toCli := p.Counts()
	held := [2]bool{p.sides[0].held.Load(), p.sides[1].held.Load()}
	_ = p.sides[0].conn.Close()
	_ = p.sides[1].conn.Close()
	p.Release()

	s.mu.Lock()
	s.result = Result{Reason: reason, ToUpstream: toUp, ToClient: toCli, Held: held}
	s.mu.Unlock()
	close(s.done)
}

// Done is closed when a spliced pair has ended and both connections are
// closed. It is nil for an attached pair.
func (p *Pair) Done() <-chan struct{} {
	if p.splice == nil {
		return nil
	}
	return p.splice.done
}

// Wait blocks until a spliced pair has ended and returns what it did.
func (p *Pair) Wait() Result {
	s := p.splice
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.result
}
