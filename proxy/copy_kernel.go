package proxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns-hairpin/hairpin/proxy/internal/sockmap"
)

// kernelCopier is the copyFunc of the in-kernel relay (--kernel-relay): the
// first direction of a connection to arrive hands both sockets to the
// kernel, and each direction then waits in sockmap's Copy, which meets the
// copyFunc contract, while the kernel moves the bytes. A connection the
// kernel refuses (a socket that already received a FIN, full maps) is
// relayed by adaptiveCopy instead, both directions alike.
type kernelCopier struct {
	relay    *sockmap.Relay
	fallback func() // counts a connection relayed in userspace

	mu    sync.Mutex
	conns map[*net.TCPConn]*kernelConn // both sockets of each connection
}

// kernelConn is one connection's handover, shared by its two directions.
type kernelConn struct {
	a, b  *net.TCPConn
	ready chan struct{} // closed once pair is set (nil: userspace)
	pair  *sockmap.Pair
	left  atomic.Int32 // directions still running
}

func newKernelCopier(r *sockmap.Relay, fallback func()) *kernelCopier {
	return &kernelCopier{relay: r, fallback: fallback, conns: map[*net.TCPConn]*kernelConn{}}
}

func (k *kernelCopier) copy(dst, src *net.TCPConn, moved *atomic.Int64, tick time.Duration) error {
	kc := k.join(dst, src)
	defer k.leave(kc)
	if kc.pair == nil {
		return adaptiveCopy(dst, src, moved, tick)
	}
	return kc.pair.Copy(src, moved, tick)
}

// join returns the connection's handover, doing it if this direction is the
// first to arrive, and waits until it is done.
func (k *kernelCopier) join(dst, src *net.TCPConn) *kernelConn {
	k.mu.Lock()
	kc, second := k.conns[src]
	if !second {
		kc = &kernelConn{a: src, b: dst, ready: make(chan struct{})}
		kc.left.Store(2)
		k.conns[src], k.conns[dst] = kc, kc
	}
	k.mu.Unlock()
	if second {
		<-kc.ready
		return kc
	}
	// The relay's client socket comes first in the pair only for the
	// pair's own naming; the kernel path is symmetric.
	p, err := k.relay.Attach(src, dst)
	if err != nil {
		k.fallback()
	} else {
		kc.pair = p
	}
	close(kc.ready)
	return kc
}

// leave releases the pair once both directions have returned.
func (k *kernelCopier) leave(kc *kernelConn) {
	if kc.left.Add(-1) != 0 {
		return
	}
	k.mu.Lock()
	delete(k.conns, kc.a)
	delete(k.conns, kc.b)
	k.mu.Unlock()
	if kc.pair != nil {
		kc.pair.Release()
	}
}
