package proxy

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// copyFunc is the seam between a connection's lifecycle and its bytes: it
// carries one direction, src to dst, once the PROXY header is on the wire.
// The default is adaptiveCopy; the in-kernel relay replaces it for both
// directions of every connection.
//
// Contract:
//   - Return nil when src reports EOF and every byte read from it has been
//     delivered to dst; return the error when a read or write fails.
//   - Add each byte delivered to dst to moved as it goes, or at least once
//     per tick: the idle timeout and the byte metrics read moved and
//     nothing else.
//   - Return promptly once either socket is closed, whatever the state.
//   - Never close, half-close or set deadlines on dst: the relay turns a nil
//     return into dst.CloseWrite (half-close), an error into closing both
//     sockets, and closes both for the idle timeout, the drain deadline and
//     shutdown. Deadlines on src belong to the copier.
//
// The two directions run concurrently, each on its own goroutine.
type copyFunc func(dst, src *net.TCPConn, moved *atomic.Int64, tick time.Duration) error

// maxTick bounds the relay's clock: how stale the byte metrics of a long
// transfer may be, and how late idleness is noticed.
const maxTick = 5 * time.Second

// relayTick is the clock period for an idle timeout; a tenth of it keeps the
// overshoot to ~10 %.
func relayTick(idle time.Duration) time.Duration {
	if idle <= 0 {
		return maxTick
	}
	return min(max(idle/10, 10*time.Millisecond), maxTick)
}

// direction indexes relay.moved.
const (
	toUp = iota
	toClient
)

// relay runs the two directions of one connection with copy and owns
// everything around them: half-close, the idle timeout, byte accounting and
// abort (idle, drain, shutdown).
//
// One timer per connection, not per direction, does the bookkeeping: every
// tick it publishes the bytes moved since the last tick and, when neither
// counter changed for the idle timeout, closes both sockets. Closing is also
// what unblocks a direction stuck writing to a peer that stopped reading.
type relay struct {
	client, upstream *net.TCPConn
	copy             copyFunc
	idle, tick       time.Duration
	count            [2]func(int64) // byte-count sinks, per direction

	moved     [2]atomic.Int64
	published [2]int64 // what count has seen; touched only under tickMu
	tickMu    sync.Mutex
	lastMove  time.Time
	timer     *time.Timer

	pending atomic.Int32 // directions still running
	done    func(reason string, up, down int64)

	abortOnce sync.Once
	reason    atomic.Value // string: why the relay was cut short
}

func newRelay(client, upstream *net.TCPConn, copy copyFunc, idle time.Duration, toUpstream, toClientSink func(int64)) *relay {
	return &relay{
		client: client, upstream: upstream, copy: copy,
		idle: idle, tick: relayTick(idle),
		count: [2]func(int64){toUpstream, toClientSink},
	}
}

// abort closes both connections, unblocking any copy in progress. The first
// reason wins.
func (r *relay) abort(reason string) {
	r.abortOnce.Do(func() {
		r.reason.Store(reason)
		_ = r.client.Close()
		_ = r.upstream.Close()
	})
}

func (r *relay) abortReason() string {
	s, _ := r.reason.Load().(string)
	return s
}

// onTick publishes byte counts and enforces the idle timeout.
func (r *relay) onTick() {
	r.tickMu.Lock()
	defer r.tickMu.Unlock()
	if r.publish() {
		r.lastMove = time.Now()
	}
	if r.idle > 0 && time.Since(r.lastMove) >= r.idle {
		r.abort(closedIdle)
		return
	}
	r.timer.Reset(r.tick)
}

// publish hands the bytes moved since the last call to the metrics and
// reports whether any moved. Caller holds tickMu.
func (r *relay) publish() bool {
	any := false
	for d := range r.moved {
		if n := r.moved[d].Load(); n != r.published[d] {
			r.count[d](n - r.published[d])
			r.published[d] = n
			any = true
		}
	}
	return any
}

// start runs both directions, each on a goroutine of its own whose stack
// holds nothing but the copy, and returns. The last direction to end stops
// the clock, closes both connections, publishes the final byte counts and
// calls done with the close reason and the bytes moved each way.
func (r *relay) start(done func(reason string, up, down int64)) {
	r.tickMu.Lock()
	r.lastMove = time.Now()
	r.timer = time.AfterFunc(r.tick, r.onTick)
	r.tickMu.Unlock()
	r.done = done
	r.pending.Store(2)
	go r.direction(r.client, r.upstream, &r.moved[toClient])
	go r.direction(r.upstream, r.client, &r.moved[toUp])
}

// end is called once per direction; the second call finishes the relay.
func (r *relay) end() {
	if r.pending.Add(-1) != 0 {
		return
	}
	r.timer.Stop()
	r.abort(closedEOF)
	r.tickMu.Lock()
	r.publish()
	r.tickMu.Unlock()
	r.done(r.abortReason(), r.moved[toUp].Load(), r.moved[toClient].Load())
}

// direction copies src to dst and turns the outcome into the relay's
// semantics: EOF becomes a half-close of dst, so a client that half-closes
// still gets its response; an error closes both sides.
func (r *relay) direction(dst, src *net.TCPConn, moved *atomic.Int64) {
	defer r.end()
	if err := r.copy(dst, src, moved, r.tick); err != nil {
		r.abort(closedError)
		return
	}
	if err := dst.CloseWrite(); err != nil && !errors.Is(err, net.ErrClosed) {
		r.abort(closedError)
	}
}
