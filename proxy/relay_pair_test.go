package proxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coredns-hairpin/hairpin/proxy/internal/evloop"
	"github.com/coredns-hairpin/hairpin/proxy/internal/rawsock"
)

// rig runs one relay between two loopback TCP connections on an event loop
// of its own, as a loopConn does once it relays, without a Server: the test
// holds the client's end and the upstream's end, and ended says why the
// relay finished.
type rig struct {
	ev       *evloop.Loop
	r        relay
	ends     [2]rigEnd
	reg      [2]evloop.Reg
	client   *net.TCPConn // the client's end
	upstream *net.TCPConn // the upstream's end
	ended    chan string
}

type rigEnd struct {
	rg *rig
	s  side
}

func (e *rigEnd) Event(events uint32) {
	if end := e.rg.r.event(e.s, events); end != "" {
		e.rg.finish(end)
	}
}

// finish closes the relay's sockets, as loopConn.end does.
func (rg *rig) finish(reason string) {
	for s, fd := range rg.r.fd {
		if fd >= 0 {
			_ = rg.ev.Remove(rg.reg[s], -1)
			_ = unix.Close(fd)
			rg.r.fd[s] = -1
		}
	}
	rg.r.release()
	rg.ended <- reason
}

// tcpPair returns the dialling and the accepted end of one loopback TCP
// connection.
func tcpPair(t *testing.T) (dialer, accepted *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ln.AcceptTCP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(); _ = a.Close() })
	return d, a
}

// newRig connects client → proxy → upstream. before, if not nil, runs
// before the relay registers the proxy's two sockets (rg.r.fd), so a test
// can queue bytes or set buffer sizes first.
func newRig(t *testing.T, before func(rg *rig)) *rig {
	t.Helper()
	rg := &rig{ended: make(chan string, 1)}
	rg.r.bufs = &bufCache{}
	var pc, pu *net.TCPConn
	rg.client, pc = tcpPair(t)
	pu, rg.upstream = tcpPair(t)
	for s, c := range [2]*net.TCPConn{pc, pu} {
		fd, err := rawsock.Detach(c)
		if err != nil {
			t.Fatal(err)
		}
		rg.r.fd[s] = fd
	}
	if before != nil {
		before(rg)
	}
	ev, err := evloop.New()
	if err != nil {
		t.Fatal(err)
	}
	rg.ev = ev
	for s := range rg.ends {
		rg.ends[s] = rigEnd{rg, side(s)}
		if rg.reg[s], err = ev.Add(rg.r.fd[s], connEvents, &rg.ends[s]); err != nil {
			t.Fatal(err)
		}
	}
	go ev.Run(func(time.Time) time.Time { return time.Time{} })
	t.Cleanup(func() {
		ev.Call(func() {
			if rg.r.fd[0] >= 0 {
				rg.finish("test over")
			}
			ev.Stop()
		})
		<-ev.Done()
	})
	return rg
}

// wait returns the reason the relay ended, failing after 5 s.
func (rg *rig) wait(t *testing.T) string {
	t.Helper()
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	select {
	case r := <-rg.ended:
		return r
	case <-timer.C:
	}
	t.Fatal("relay still running after 5 s")
	return ""
}

// moved is what the relay delivered, by direction.
func (rg *rig) moved() (up, down int64) {
	rg.ev.Call(func() { up, down = rg.r.flows[toUpstream].moved, rg.r.flows[toClient].moved })
	return up, down
}

// readAll reads c to its end and says how it ended (ending).
func readAll(c *net.TCPConn) ([]byte, string) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	return b, ending(err)
}

// ending names how a stream ended: "eof" (a FIN), "reset", or the error.
func ending(err error) string {
	switch {
	case err == nil, errors.Is(err, io.EOF):
		return "eof"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	}
	return err.Error()
}

func TestRelayHalfClosesEachWay(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  func(*rig) *net.TCPConn
		second func(*rig) *net.TCPConn
	}{
		{"client closes first", func(rg *rig) *net.TCPConn { return rg.client }, func(rg *rig) *net.TCPConn { return rg.upstream }},
		{"upstream closes first", func(rg *rig) *net.TCPConn { return rg.upstream }, func(rg *rig) *net.TCPConn { return rg.client }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rg := newRig(t, nil)
			first, second := tc.first(rg), tc.second(rg)
			if _, err := first.Write([]byte("request")); err != nil {
				t.Fatal(err)
			}
			_ = first.CloseWrite()
			if got, how := readAll(second); string(got) != "request" || how != "eof" {
				t.Fatalf("far side read %q then %s; want the request then eof", got, how)
			}
			// The direction that is still open keeps working after the
			// half-close.
			if _, err := second.Write([]byte("got request")); err != nil {
				t.Fatal(err)
			}
			_ = second.CloseWrite()
			if got, how := readAll(first); string(got) != "got request" || how != "eof" {
				t.Fatalf("first side read %q then %s; want the reply then eof", got, how)
			}
			if r := rg.wait(t); r != closedEOF {
				t.Fatalf("relay ended with %q, want %q", r, closedEOF)
			}
		})
	}
}

// outqEmpty waits until c has no unacknowledged bytes (SIOCOUTQ): they are
// in the proxy's receive queue, so a reset that follows cannot drop them.
func outqEmpty(t *testing.T, c *net.TCPConn) {
	t.Helper()
	if !waitOutqEmpty(c) {
		t.Fatal("send queue still not empty after 5 s")
	}
}

func waitOutqEmpty(c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		n := -1
		_ = rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) })
		if n == 0 {
			return true
		}
	}
	return false
}

// TestRelayDeliversBytesQueuedAheadOfAReset: a reset socket still holds
// what its peer sent before the RST, and the relay delivers it before it
// ends (as closedError): an upstream that answers and resets with the rest
// of the request unread, and a client that sends and resets. Each case runs
// 20 times: the bytes and the RST often arrive in one event.
func TestRelayDeliversBytesQueuedAheadOfAReset(t *testing.T) {
	payload := bytes.Repeat([]byte("p"), 3000)
	for _, tc := range []struct {
		name             string
		resetter, reader func(*rig) *net.TCPConn
	}{
		{"upstream answers, then resets", func(rg *rig) *net.TCPConn { return rg.upstream }, func(rg *rig) *net.TCPConn { return rg.client }},
		{"client sends, then resets", func(rg *rig) *net.TCPConn { return rg.client }, func(rg *rig) *net.TCPConn { return rg.upstream }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 20 {
				rg := newRig(t, nil)
				resetter, reader := tc.resetter(rg), tc.reader(rg)
				// The reader's bytes reach the resetter, which never reads
				// them: its close is a reset, not a FIN.
				if _, err := reader.Write([]byte("unread bytes")); err != nil {
					t.Fatal(err)
				}
				if _, err := resetter.Write(payload); err != nil {
					t.Fatal(err)
				}
				outqEmpty(t, resetter)
				_ = resetter.SetLinger(0)
				_ = resetter.Close()
				got, _ := readAll(reader)
				if !bytes.Equal(got, payload) {
					t.Fatalf("run %d: %d of %d bytes sent ahead of the reset arrived", i, len(got), len(payload))
				}
				if r := rg.wait(t); r != closedError {
					t.Fatalf("run %d: relay ended with %q, want %q", i, r, closedError)
				}
			}
		})
	}
}

// sendOOB sends b as TCP urgent data.
func sendOOB(t *testing.T, c *net.TCPConn, b []byte) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		serr = syscall.Sendto(int(fd), b, syscall.MSG_OOB, nil)
		return true
	}); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
}

// TestRelayReadsPastUrgentData: a read stops short at TCP's urgent mark
// with more bytes queued, so the short-read rule must not leave them for an
// arrival that never comes; the urgent byte itself is out of band and not
// relayed. Sent while the relay runs, and queued before it starts.
func TestRelayReadsPastUrgentData(t *testing.T) {
	send := func(rg *rig) {
		if _, err := rg.client.Write([]byte("abc")); err != nil {
			t.Fatal(err)
		}
		sendOOB(t, rg.client, []byte("X"))
		if _, err := rg.client.Write([]byte("def")); err != nil {
			t.Fatal(err)
		}
	}
	for _, queued := range []bool{false, true} {
		var rg *rig
		if queued {
			rg = newRig(t, func(rg *rig) { send(rg); time.Sleep(20 * time.Millisecond) })
		} else {
			rg = newRig(t, nil)
			send(rg)
		}
		got := make([]byte, 6)
		_ = rg.upstream.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := io.ReadFull(rg.upstream, got); err != nil || string(got) != "abcdef" {
			t.Fatalf("queued %v: upstream read %q, %v; want %q", queued, got, err, "abcdef")
		}
	}
}

// TestRelayHoldsBackOnEAGAINEitherWay: both directions stream at once into
// readers that start late, through small send buffers on the relay's
// sockets, so its writes meet EAGAIN on both sides. (Not small receive
// buffers too: below one loopback MSS, TCP's silly-window avoidance stalls
// the connection between window probes, whatever relays it.) While the readers wait the relay holds
// at most one pipe per direction (it stops reading: the backpressure); once
// they read, every byte arrives in order.
func TestRelayHoldsBackOnEAGAINEitherWay(t *testing.T) {
	const total = 4 << 20
	rg := newRig(t, func(rg *rig) {
		for _, fd := range rg.r.fd {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 8<<10)
		}
	})
	ends := [2]*net.TCPConn{toUpstream: rg.client, toClient: rg.upstream} // by the direction they write
	var want [2][]byte
	werr := make(chan error, 2)
	for d, c := range ends {
		want[d] = newPattern(uint64(11 + d)).bytes(total)
		go func() {
			_, err := c.Write(want[d])
			if err == nil {
				err = c.CloseWrite()
			}
			werr <- err
		}()
	}
	time.Sleep(200 * time.Millisecond) // the buffers fill
	var held [2]int
	var blocked [2]bool
	rg.ev.Call(func() {
		for d := range rg.r.flows {
			f := &rg.r.flows[d]
			held[d], blocked[d] = f.n-f.off+f.inPipe, !f.writable
		}
	})
	for d, h := range held {
		if !blocked[d] {
			t.Errorf("direction %d: its writes never met EAGAIN; the test proves nothing", d)
		}
		if h > pipeSize {
			t.Errorf("direction %d holds %d bytes while its reader waits; at most one pipe (%d)", d, h, pipeSize)
		}
	}
	type read struct {
		b   []byte
		how string
	}
	var reads [2]chan read
	for d := range reads {
		reads[d] = make(chan read, 1)
		go func() { b, how := readAll(ends[dir(d).other()]); reads[d] <- read{b, how} }()
	}
	for d := range reads {
		r := <-reads[d]
		if r.how != "eof" || !bytes.Equal(r.b, want[d]) {
			t.Errorf("direction %d: %d of %d bytes, ended %s, in order %v", d, len(r.b), len(want[d]), r.how, bytes.Equal(r.b, want[d]))
		}
	}
	for range 2 {
		if err := <-werr; err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	if r := rg.wait(t); r != closedEOF {
		t.Fatalf("relay ended with %q, want %q", r, closedEOF)
	}
	if up, down := rg.moved(); up != total || down != total {
		t.Fatalf("moved %d up and %d down, want %d each", up, down, total)
	}
}

// TestRelayEndsAtAReadError: a socket that fails with nothing queued ends
// the relay at once, as closedError, and the far side sees its connection
// close.
func TestRelayEndsAtAReadError(t *testing.T) {
	rg := newRig(t, nil)
	_ = rg.client.SetLinger(0)
	_ = rg.client.Close()
	if r := rg.wait(t); r != closedError {
		t.Fatalf("relay ended with %q, want %q", r, closedError)
	}
	if _, how := readAll(rg.upstream); how != "eof" && how != "reset" {
		t.Fatalf("upstream's connection ended with %s", how)
	}
}
