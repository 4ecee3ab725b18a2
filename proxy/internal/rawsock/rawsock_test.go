package rawsock

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func socketpair(t *testing.T) [2]int {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fds[0]); _ = unix.Close(fds[1]) })
	return fds
}

func TestRecvAndSendOnNonBlockingSockets(t *testing.T) {
	p := socketpair(t)
	if _, err := Recv(p[0], make([]byte, 8)); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("Recv on an empty socket: %v, want EAGAIN", err)
	}
	if n, err := Send(p[1], []byte("hello")); n != 5 || err != nil {
		t.Fatalf("Send: %d, %v", n, err)
	}
	b := make([]byte, 8)
	if n, err := Recv(p[0], b); err != nil || string(b[:n]) != "hello" {
		t.Fatalf("Recv: %q, %v", b[:n], err)
	}
	if n, err := Recv(p[0], nil); n != 0 || err != nil {
		t.Fatalf("Recv into nothing: %d, %v", n, err)
	}
	_ = unix.Close(p[0])
	// MSG_NOSIGNAL: an EPIPE to book, not a SIGPIPE that ends the test.
	if _, err := Send(p[1], []byte("x")); !errors.Is(err, unix.EPIPE) {
		t.Fatalf("Send to a closed peer: %v, want EPIPE", err)
	}
}

// TestAgainReportsTheCallsEAGAIN: the relay tells a socket that would
// block from one that failed by Again alone, on what Recv and Send return.
func TestAgainReportsTheCallsEAGAIN(t *testing.T) {
	p := socketpair(t)
	_, empty := Recv(p[0], make([]byte, 8))
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"Recv on an empty socket", empty, true},
		{"EAGAIN", unix.EAGAIN, true},
		{"no error", nil, false},
		{"EINTR", unix.EINTR, false},
		{"EPIPE", unix.EPIPE, false},
		{"ECONNRESET", unix.ECONNRESET, false},
	} {
		if got := Again(tc.err); got != tc.want {
			t.Errorf("%s: Again(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestSockaddrRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		family   int
	}{
		{"127.0.0.1:80", "127.0.0.1:80", syscall.AF_INET},
		{"[::1]:443", "[::1]:443", syscall.AF_INET6},
		{"[::ffff:127.0.0.2]:8080", "127.0.0.2:8080", syscall.AF_INET}, // dialled as IPv4, as net.Dial does
		{"[2001:db8::1]:1", "[2001:db8::1]:1", syscall.AF_INET6},
	} {
		var s sockaddr
		family := s.set(netip.MustParseAddrPort(tc.in))
		if got := s.addrPort().String(); family != tc.family || got != tc.want {
			t.Errorf("%s: family %d, back as %s; want %d, %s", tc.in, family, got, tc.family, tc.want)
		}
	}
}

// waitWritable polls fd for POLLOUT, as an event loop would wait for a
// pending connect.
func waitWritable(t *testing.T, fd int) {
	t.Helper()
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	if _, err := unix.Poll(pfd, 5000); err != nil || pfd[0].Revents == 0 {
		t.Fatalf("poll: %v, revents %#x", err, pfd[0].Revents)
	}
}

// TestConnectAndAcceptThroughASecondListener: a second socket bound to a
// listener's port (SO_REUSEPORT) accepts too, and a non-blocking connect's
// outcome is read once the socket signals.
func TestConnectAndAcceptThroughASecondListener(t *testing.T) {
	lc := net.ListenConfig{Control: ReusePort}
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	second, err := Listener(ln.(*net.TCPListener), true)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(second)
	if got, _ := LocalAddr(second); got != ap {
		t.Fatalf("second listener on %s, want %s", got, ap)
	}
	_ = ln.Close() // only the second one is left to accept
	fd, pending, err := Connect(ap, false)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if pending {
		waitWritable(t, fd)
	}
	if err := ConnectError(fd); err != nil {
		t.Fatalf("connect: %v", err)
	}
	local, _ := LocalAddr(fd)
	var nfd int
	var client netip.AddrPort
	for deadline := time.Now().Add(5 * time.Second); ; {
		if nfd, client, err = Accept(second); !errors.Is(err, unix.EAGAIN) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	defer unix.Close(nfd)
	if client != local {
		t.Fatalf("accepted %s, want the connecting socket %s", client, local)
	}
}

func TestConnectErrorReportsARefusal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	_ = ln.Close()
	fd, pending, err := Connect(ap, false)
	if err == nil && pending {
		defer unix.Close(fd)
		waitWritable(t, fd)
		err = ConnectError(fd)
	}
	if !errors.Is(err, unix.ECONNREFUSED) {
		t.Fatalf("connect to a closed port: %v, want ECONNREFUSED", err)
	}
}

// TestDetachAndResetClose: a detached descriptor is the same socket, and
// closing it with ResetClose resets the peer.
func TestDetachAndResetClose(t *testing.T) {
	conn, peer := loopbackPair(t)
	fd, err := Detach(conn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the detached net.Conn still writes: %v", err)
	}
	if _, err := Send(fd, []byte("through the fd")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len("through the fd"))
	if _, err := io.ReadFull(peer, got); err != nil || string(got) != "through the fd" {
		t.Fatalf("peer read %q, %v", got, err)
	}
	ResetClose(fd)
	_ = peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := peer.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("peer read %v after ResetClose, want ECONNRESET", err)
	}
}

// loopbackPair is a dialled TCP connection and its accepted end; the
// accepted one closes with the test.
func loopbackPair(t *testing.T) (dialled, accepted net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		defer ln.Close()
		dialled, err = net.Dial("tcp", ln.Addr().String())
	}
	if err == nil {
		accepted, err = ln.Accept()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = accepted.Close() })
	return dialled, accepted
}

// TestConnectSetsNoDelayAndKeepaliveOnlyWhenAsked: every relayed socket
// writes at once; keepalive costs a system call and is set only on request.
func TestConnectSetsNoDelayAndKeepaliveOnlyWhenAsked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	for _, keepalive := range []bool{false, true} {
		fd, _, err := Connect(ap, keepalive)
		if err != nil {
			t.Fatal(err)
		}
		checkOptions(t, "the connected socket", fd, keepalive)
		_ = unix.Close(fd)
	}
}

// TestAcceptedSocketsInheritTheListenersOptions: the loops set TCP_NODELAY
// and SO_KEEPALIVE once on each listener, not per connection, which holds
// only because Linux's accept(2) clones the listener's socket.
func TestAcceptedSocketsInheritTheListenersOptions(t *testing.T) {
	for _, keepalive := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lfd, err := Listener(ln.(*net.TCPListener), false)
		_ = ln.Close()
		if err != nil {
			t.Fatal(err)
		}
		SetOptions(lfd, keepalive)
		sa, err := unix.Getsockname(lfd)
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port))
		if err != nil {
			t.Fatal(err)
		}
		var fd int
		for deadline := time.Now().Add(5 * time.Second); ; {
			if fd, _, err = Accept(lfd); err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		_ = c.Close()
		_ = unix.Close(lfd)
		if err != nil {
			t.Fatalf("accept: %v", err)
		}
		checkOptions(t, "the accepted socket", fd, keepalive)
		_ = unix.Close(fd)
	}
}

// checkOptions fails t unless fd has TCP_NODELAY, and SO_KEEPALIVE exactly
// when keepalive.
func checkOptions(t *testing.T, what string, fd int, keepalive bool) {
	t.Helper()
	nodelay, _ := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
	ka, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE)
	if nodelay != 1 {
		t.Errorf("keepalive %v: %s has TCP_NODELAY %d, want 1", keepalive, what, nodelay)
	}
	if (ka != 0) != keepalive {
		t.Errorf("keepalive %v: %s has SO_KEEPALIVE %d", keepalive, what, ka)
	}
}
