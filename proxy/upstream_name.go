package proxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// resolveTTL is how long the event loops connect to an upstream name's last
// address before it is looked up again (in the background: the connection
// that finds it stale still uses it). One lookup a second per route, not one
// per connection (Go's dialer asks for A and AAAA each time), and a Service
// that is recreated with a new ClusterIP is followed within about a second.
const resolveTTL = time.Second

// upstreamName caches the address of a route's upstream when it is a name,
// so that the event loops can connect to it themselves. The first
// connection, and any after a failure, goes through the Server's dialer,
// which resolves the name, tries every address, and seeds the cache with
// the one that answered.
type upstreamName struct {
	host    string
	timeout time.Duration
	lookup  lookupFunc

	cur        atomic.Pointer[resolved]
	refreshing atomic.Bool
}

// resolved is one address of the name and when it was learnt.
type resolved struct {
	addr netip.AddrPort
	at   time.Time
}

// lookupFunc resolves a name, as net.Resolver.LookupNetIP does.
type lookupFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

// newUpstreamName returns the cache for upstream, or nil if upstream is not
// host:port with a name. A nil lookup is net.DefaultResolver's.
func newUpstreamName(upstream string, timeout time.Duration, lookup lookupFunc) *upstreamName {
	host, _, err := net.SplitHostPort(upstream)
	if err != nil || host == "" {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil // an IP literal; with a zone it stays with the dialer
	}
	if lookup == nil {
		lookup = net.DefaultResolver.LookupNetIP
	}
	return &upstreamName{host: host, timeout: timeout, lookup: lookup}
}

// current returns the address to connect to, if there is one; once it is
// older than resolveTTL it starts one background lookup.
func (u *upstreamName) current(now time.Time) (netip.AddrPort, bool) {
	r := u.cur.Load()
	if r == nil {
		return netip.AddrPort{}, false
	}
	if now.Sub(r.at) >= resolveTTL && u.refreshing.CompareAndSwap(false, true) {
		go u.refresh(r)
	}
	return r.addr, true
}

// seed records the address a dial through the Server's dialer reached.
func (u *upstreamName) seed(addr net.Addr) {
	if ta, ok := addr.(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		u.cur.Store(&resolved{addr: netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), at: time.Now()})
	}
}

// drop forgets the address after a failed connect, so that the next
// connection resolves and dials afresh, and reports its own error.
func (u *upstreamName) drop(addr netip.AddrPort) {
	if r := u.cur.Load(); r != nil && r.addr == addr {
		u.cur.CompareAndSwap(r, nil)
	}
}

// refresh looks the name up again. The address in use is kept if the name
// still has it, else the first one; a name that no longer resolves is
// dropped, and a lookup that merely failed keeps the old address.
func (u *upstreamName) refresh(old *resolved) {
	defer u.refreshing.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), u.timeout)
	defer cancel()
	addrs, err := u.lookup(ctx, "ip", u.host)
	var dnsErr *net.DNSError
	switch {
	case err != nil && errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		u.cur.CompareAndSwap(old, nil)
		return
	case err != nil || len(addrs) == 0:
		return
	}
	next := netip.AddrPortFrom(addrs[0].Unmap(), old.addr.Port())
	for _, a := range addrs {
		if a.Unmap() == old.addr.Addr() {
			next = old.addr
		}
	}
	u.cur.CompareAndSwap(old, &resolved{addr: next, at: time.Now()})
}

// literalUpstream is the upstream's address when it is an IP literal
// without a zone, which the event loop can connect to itself; names (and
// zones) are dialled by the Server's dialer.
func literalUpstream(hostport string) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(hostport)
	if err != nil || ap.Addr().Zone() != "" || ap.Port() == 0 {
		return netip.AddrPort{}, false
	}
	return ap, true
}
