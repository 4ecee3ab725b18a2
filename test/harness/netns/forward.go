package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Listen opens a listener inside the namespace.
func (n *NS) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	err := n.Do(func() error {
		var err error
		l, err = net.Listen(network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("netns %s: listen %s: %w", n.Name, addr, err)
	}
	return l, nil
}

// ListenPacket opens a packet socket inside the namespace.
func (n *NS) ListenPacket(network, addr string) (net.PacketConn, error) {
	var c net.PacketConn
	err := n.Do(func() error {
		var err error
		c, err = net.ListenPacket(network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("netns %s: listen %s: %w", n.Name, addr, err)
	}
	return c, nil
}

// DialContext connects from inside the namespace. The connect itself runs
// on the thread that entered it; the returned conn is used from anywhere.
func (n *NS) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.Do(func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Forwarder relays the TCP connections accepted on a listener to an address
// dialled by a dial function: the test process's bridge between two
// namespaces that share no route (the root namespace's loopback and a
// node's). Bytes are relayed untouched in both directions, with half-close.
type Forwarder struct {
	l    net.Listener
	dial func(context.Context) (net.Conn, error)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

// Forward starts relaying l's connections to what dial returns. Close stops it.
func Forward(l net.Listener, dial func(context.Context) (net.Conn, error)) *Forwarder {
	ctx, cancel := context.WithCancel(context.Background())
	f := &Forwarder{l: l, dial: dial, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	return f
}

// Addr returns the listener's address.
func (f *Forwarder) Addr() net.Addr { return f.l.Addr() }

func (f *Forwarder) accept() {
	defer f.wg.Done()
	for {
		c, err := f.l.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go f.relay(c)
	}
}

func (f *Forwarder) relay(c net.Conn) {
	defer f.wg.Done()
	up, err := f.dial(f.ctx)
	if err != nil {
		c.Close()
		return
	}
	if !f.track(c, up) {
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pipe(up, c) }()
	go func() { defer wg.Done(); pipe(c, up) }()
	wg.Wait()
	f.untrack(c, up)
}

// pipe copies src to dst, then half-closes dst's write side.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		_ = dst.Close()
	}
}

func (f *Forwarder) track(cs ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx.Err() != nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *Forwarder) untrack(cs ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(f.conns, c)
	}
}

// Close stops accepting, cuts every relayed connection and waits for the
// relays to end.
func (f *Forwarder) Close() error {
	f.cancel()
	err := f.l.Close()
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
