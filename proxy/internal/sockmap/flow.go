package sockmap

import (
	"time"

	"github.com/cilium/ebpf"
)

// Flow control.
//
// A redirected segment leaves its socket's receive queue when the program
// returns, before the kernel has sent it: it waits in the peer's queue
// (struct sk_psock's ingress_skb) until the peer's send buffer takes it. That
// queue has no limit and does not close the sender's TCP window, so a
// receiver slower than its sender would make the kernel buffer the whole
// stream (measured: 3 GB for a client that did not read for 3 s).
//
// With Options.MaxQueued set, a sweeper reads every socket's counter once
// per FlowInterval, in one batch call, and for each socket that redirected
// since the last sweep compares what it redirected with what the peer has
// accepted. Beyond MaxQueued it holds the direction: the program keeps that
// socket's segments on the socket from then on, the pair's reader waits
// until the peer has taken every byte redirected before, and then relays
// the direction in userspace. A held direction stays held: handing it back
// could reorder bytes. The redirect queue is then bounded by MaxQueued plus
// what arrives in one FlowInterval.
//
// It is off by default because the held path is not bounded either: a
// segment kept on its socket (SK_PASS) goes to the socket's BPF ingress
// queue, which is charged to the socket's receive memory without any limit.
// With a slow peer it grew to 172 MB on a socket whose receive buffer was
// 32 MiB; past that the kernel drops every arriving segment, ACKs included
// (the backlog is full), and both directions stall in retransmission
// backoff (cwnd 1, backoff 6, rto 13 s). The proxy's 1 GiB both-ways test
// timed out in 3 of 5 runs with it on, and passed 4 of 4 with it off.

// DefaultFlowInterval is the sweep period when flow control is on.
const DefaultFlowInterval = 10 * time.Millisecond

const sweepChunk = 1024

// sweep runs until stop is closed.
func (r *Relay) sweep(stop <-chan struct{}) {
	t := time.NewTicker(r.flowEvery)
	defer t.Stop()
	keys := make([]uint64, sweepChunk)
	vals := make([]counter, sweepChunk)
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if r.Pairs() == 0 {
			continue
		}
		var cursor ebpf.MapBatchCursor
		for {
			n, err := r.counters.BatchLookup(&cursor, keys, vals, nil)
			for i := range n {
				r.check(keys[i], vals[i].Bytes)
			}
			// ErrKeyNotExist is the end; any other error ends this sweep
			// too, and the next one starts over.
			if err != nil {
				break
			}
		}
	}
}

// check holds the direction whose source is the socket with this cookie if
// its peer is more than MaxQueued behind.
func (r *Relay) check(cookie, redirected uint64) {
	r.mu.Lock()
	ref, ok := r.sources[cookie]
	r.mu.Unlock()
	if !ok {
		return
	}
	src, dst := &ref.p.sides[ref.from], &ref.p.sides[1-ref.from]
	if redirected == src.seen || src.held.Load() {
		return
	}
	src.seen = redirected
	w, err := written(dst.conn)
	if err != nil {
		return // closing
	}
	if redirected-min(redirected, w-dst.base) > r.maxQueued {
		ref.p.hold(ref.from)
	}
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
