package sockmap

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// ErrDataInUserspace is returned by Copy when a segment reached the process
// for a direction the kernel should have relayed (its peer was not in the
// sockhash) and relaying it now could reorder the stream (see adoptStray),
// so the connection must be closed.
var ErrDataInUserspace = errors.New("relayed data reached userspace")

// Copy carries the direction whose source is src (one of the pair's two
// sockets) until src's EOF, and returns nil once the other socket has
// accepted every byte of it: the caller then half-closes the other socket,
// as the kernel does not redirect a FIN. It returns an error when a socket
// fails or is closed. It never closes or half-closes anything.
//
// The program takes every segment, so the read Copy parks in returns only
// at EOF or on an error. If tick is positive, Copy also wakes every tick to
// add the bytes relayed since its last addition to moved; it adds the rest
// before it returns. A held direction (adoptStray) is relayed here, in
// userspace, once the kernel has delivered what it redirected before.
func (p *Pair) Copy(src *net.TCPConn, moved *atomic.Int64, tick time.Duration) error {
	from := -1
	for i := range p.sides {
		if p.sides[i].conn == src {
			from = i
		}
	}
	if from < 0 {
		return errors.New("sockmap: Copy: not one of the pair's sockets")
	}
	if !p.r.enter() {
		return ErrClosed
	}
	defer p.r.leave()
	c := copier{p: p, src: &p.sides[from], dst: &p.sides[1-from], moved: moved, tick: tick}
	err := c.run()
	c.publish()
	return err
}

// copier is one Copy call.
type copier struct {
	p        *Pair
	src, dst *side
	moved    *atomic.Int64
	tick     time.Duration
	added    uint64 // what moved has been given
}

// publish adds to moved what was relayed since the last call.
func (c *copier) publish() {
	if c.moved == nil {
		return
	}
	if n := c.p.moved(c.p.index(c.src)); n > c.added {
		c.moved.Add(int64(n - c.added))
		c.added = n
	}
}

func (p *Pair) index(s *side) int {
	if s == &p.sides[0] {
		return 0
	}
	return 1
}

// read reads src with the tick as deadline, publishing on each tick.
func (c *copier) read(b []byte) (int, error) {
	for {
		if c.tick > 0 {
			if err := c.src.conn.SetReadDeadline(time.Now().Add(c.tick)); err != nil {
				return 0, err
			}
		}
		n, err := c.src.conn.Read(b)
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		c.publish()
	}
}

func (c *copier) run() error {
	var b [512]byte
	n, err := c.read(b[:])
	if n > 0 {
		if !c.src.held.Load() && !c.adoptStray() {
			return ErrDataInUserspace
		}
		err = c.userspace(b[:n])
	}
	if !errors.Is(err, io.EOF) {
		return err
	}
	if !c.flushed() {
		return net.ErrClosed
	}
	return nil
}

// adoptStray is AdoptStray for this Copy's direction.
func (c *copier) adoptStray() bool { return c.p.AdoptStray(c.p.index(c.src)) }

// userspace relays a held direction, starting with first, until src's EOF
// (returned as io.EOF) or an error. It begins once dst has accepted every
// byte the program redirected before the hold, so nothing is reordered.
// Plain reads: the held segments are on the socket's BPF ingress queue,
// which splice(2) would bypass.
func (c *copier) userspace(first []byte) error {
	if !c.flushed() {
		return net.ErrClosed
	}
	buf := make([]byte, 64<<10)
	b := first
	for {
		if _, err := c.dst.conn.Write(b); err != nil {
			return err
		}
		c.p.AddUserspace(c.p.index(c.src), len(b))
		n, err := c.read(buf)
		if err != nil {
			return err
		}
		b = buf[:n]
	}
}

// flushed waits until Flushed holds for this Copy's direction. It returns
// false when a socket was closed or the pair released first.
func (c *copier) flushed() bool {
	wait := 50 * time.Microsecond
	for {
		ok, err := c.p.Flushed(c.p.index(c.src))
		if err != nil {
			return false
		}
		if ok {
			return true
		}
		time.Sleep(wait)
		wait = min(2*wait, 10*time.Millisecond)
	}
}
