package evloop

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// start runs l with timers on a goroutine and stops it with the test.
func start(t *testing.T, l *Loop, timers func(time.Time) time.Time) {
	t.Helper()
	go l.Run(timers)
	t.Cleanup(func() {
		l.Call(l.Stop)
		<-l.Done()
	})
}

func newLoop(t *testing.T) *Loop {
	t.Helper()
	l, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// never is a timers callback with no deadline: the loop sleeps until an
// event or a Post wakes it.
func never(time.Time) time.Time { return time.Time{} }

// eventfd returns a non-blocking eventfd closed with the test; writing to
// it makes it readable.
func eventfd(t *testing.T) int {
	t.Helper()
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	return fd
}

func signal(t *testing.T, fd int) {
	t.Helper()
	one := [8]byte{1}
	if _, err := unix.Write(fd, one[:]); err != nil {
		t.Fatal(err)
	}
}

// within fails the test unless done is closed within d.
func within(t *testing.T, d time.Duration, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: not within %s", what, d)
	}
}

// TestPostWakesASleepingLoop: goroutines post over and over while the loop
// has no deadline, so only the wake-up can make it run what they posted;
// each function must run exactly once, none may be stranded. Each poster
// waits for its function, so the loop keeps going back to sleep and the
// post races its last look at the inbox.
func TestPostWakesASleepingLoop(t *testing.T) {
	l := newLoop(t)
	start(t, l, never)
	const posters, posts = 8, 2000
	var ran atomic.Int64
	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for range posters {
			wg.Go(func() {
				for range posts {
					if !l.Call(func() { ran.Add(1) }) {
						t.Error("Call refused by a running loop")
						return
					}
				}
			})
		}
		wg.Wait()
		close(done)
	}()
	within(t, 30*time.Second, "every posted function ran (one was stranded)", done)
	if n := ran.Load(); n != posters*posts {
		t.Fatalf("%d functions ran, want %d", n, posters*posts)
	}
}

// TestPostRunsInOrderAfterTheBatch: what one goroutine posts runs in order,
// on the loop's goroutine, and a function posted while the loop exits still
// runs before Run returns; after that Post and Call refuse.
func TestPostRunsInOrderAfterTheBatch(t *testing.T) {
	l := newLoop(t)
	var got []int
	go l.Run(never)
	for i := range 100 {
		l.Post(func() { got = append(got, i) })
	}
	late := make(chan struct{})
	l.Post(func() {
		l.Stop()
		l.Post(func() { close(late) }) // queued while Run returns
	})
	within(t, 5*time.Second, "Run returned", l.Done())
	within(t, time.Second, "the function posted during the exit ran", late)
	for i, v := range got {
		if v != i {
			t.Fatalf("posted functions ran as %v, want 0..99 in order", got)
		}
	}
	if len(got) != 100 {
		t.Fatalf("%d of 100 posted functions ran", len(got))
	}
	if l.Post(func() {}) {
		t.Error("Post accepted after Run returned")
	}
	if l.Call(func() {}) {
		t.Error("Call reported success after Run returned")
	}
}

// TestDeadlineWakesTheLoop: with nothing to do, the loop wakes when the
// timers callback said, rounded up to Grain, and not before; with the zero
// time it sleeps until something happens.
func TestDeadlineWakesTheLoop(t *testing.T) {
	l := newLoop(t)
	const after = 50 * time.Millisecond
	var deadline time.Time
	woke := make(chan time.Duration, 1)
	calls := 0
	var startAt time.Time
	start(t, l, func(now time.Time) time.Time {
		calls++
		switch calls {
		case 1:
			startAt = now
			deadline = now.Add(after)
			return deadline
		case 2:
			woke <- now.Sub(startAt)
		}
		return time.Time{}
	})
	var d time.Duration
	select {
	case d = <-woke:
	case <-time.After(2 * time.Second):
		t.Fatal("the loop did not wake for its deadline")
	}
	if d < after {
		t.Fatalf("woke after %s, before the %s deadline", d, after)
	}
	// A shared machine can delay a wake-up; a lost deadline cannot be late
	// by less than the 2 s above.
	if d > after+Grain+500*time.Millisecond {
		t.Fatalf("woke after %s for a %s deadline", d, after)
	}
	time.Sleep(100 * time.Millisecond)
	var n int
	l.Call(func() { n = calls })
	if n != 2 { // posted functions run before the batch's timers
		t.Fatalf("timers ran %d times before the Call; with no deadline the loop should have slept", n)
	}
}

// TestPastDeadlineDoesNotSleep: a deadline already passed makes the loop
// poll and run timers again at once.
func TestPastDeadlineDoesNotSleep(t *testing.T) {
	l := newLoop(t)
	var calls atomic.Int32
	done := make(chan struct{})
	start(t, l, func(now time.Time) time.Time {
		if calls.Add(1) == 20 {
			close(done)
		}
		if calls.Load() >= 20 {
			return time.Time{}
		}
		return now.Add(-time.Millisecond)
	})
	within(t, time.Second, "20 batches for 20 past deadlines", done)
}

// recorder is a Handler that counts its events and notes each batch.
type recorder struct {
	events  atomic.Int32
	mask    atomic.Uint32
	onEvent func()
}

func (r *recorder) Event(events uint32) {
	r.events.Add(1)
	r.mask.Store(events)
	if r.onEvent != nil {
		r.onEvent()
	}
}

// TestBatchDeliversEveryReadyEvent: more descriptors ready at once than one
// epoll_wait returns arrive in full batches, each event once, and timers
// runs after each batch.
func TestBatchDeliversEveryReadyEvent(t *testing.T) {
	l := newLoop(t)
	const n = Batch + 44
	recs := make([]recorder, n)
	var inBatch int
	for i := range recs {
		recs[i].onEvent = func() { inBatch++ }
		fd := eventfd(t)
		signal(t, fd)
		if _, err := l.Add(fd, unix.EPOLLIN|unix.EPOLLET, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	var batches []int
	done := make(chan struct{})
	start(t, l, func(time.Time) time.Time {
		if inBatch > 0 {
			batches = append(batches, inBatch)
			inBatch = 0
			if len(batches) == 2 {
				close(done)
			}
		}
		return time.Time{}
	})
	within(t, 2*time.Second, "two batches", done)
	var got []int
	l.Call(func() { got = batches })
	if len(got) != 2 || got[0] != Batch || got[1] != n-Batch {
		t.Fatalf("batches of %v events, want [%d %d]", got, Batch, n-Batch)
	}
	for i := range recs {
		if e := recs[i].events.Load(); e != 1 {
			t.Fatalf("descriptor %d: %d events, want 1", i, e)
		}
	}
}

// TestRemovedRegistrationGetsNoEventOfItsBatch: two descriptors ready in
// one batch, and the handler that runs first removes the other and
// registers a third in its place (it takes the freed slot). The removed
// one's event, already returned by epoll_wait, must reach neither its old
// handler nor the new one.
func TestRemovedRegistrationGetsNoEventOfItsBatch(t *testing.T) {
	for range 20 {
		l := newLoop(t)
		a, b, c := eventfd(t), eventfd(t), eventfd(t) // c is never ready
		var ra, rb, rc recorder
		var regA, regB Reg
		var err error
		fds := map[*recorder]int{&ra: a, &rb: b}
		regs := map[*recorder]*Reg{&ra: &regB, &rb: &regA}
		other := map[*recorder]*recorder{&ra: &rb, &rb: &ra}
		for _, r := range []*recorder{&ra, &rb} {
			r.onEvent = func() {
				if other[r].events.Load() > 0 {
					return
				}
				if err := l.Remove(*regs[r], fds[other[r]]); err != nil {
					t.Error(err)
				}
				if _, err := l.Add(c, unix.EPOLLIN|unix.EPOLLET, &rc); err != nil {
					t.Error(err)
				}
			}
		}
		if regA, err = l.Add(a, unix.EPOLLIN|unix.EPOLLET, &ra); err != nil {
			t.Fatal(err)
		}
		if regB, err = l.Add(b, unix.EPOLLIN|unix.EPOLLET, &rb); err != nil {
			t.Fatal(err)
		}
		signal(t, a)
		signal(t, b)
		batches := 0
		done := make(chan struct{})
		go l.Run(func(time.Time) time.Time {
			if batches++; batches == 2 {
				l.Stop()
				close(done)
			}
			return time.Time{}
		})
		within(t, 2*time.Second, "the first batch", done)
		<-l.Done()
		if na, nb := ra.events.Load(), rb.events.Load(); na+nb != 1 {
			t.Fatalf("events: a %d, b %d; the one removed in the batch got its event", na, nb)
		}
		if n := rc.events.Load(); n != 0 {
			t.Fatalf("the registration in the freed slot got %d events meant for the removed one", n)
		}
	}
}

// TestModifyChangesTheEvents: an eventfd is always writable; once its
// registration asks for EPOLLOUT, that is what its handler sees.
func TestModifyChangesTheEvents(t *testing.T) {
	l := newLoop(t)
	fd := eventfd(t)
	var r recorder
	reg, err := l.Add(fd, unix.EPOLLIN|unix.EPOLLET, &r)
	if err != nil {
		t.Fatal(err)
	}
	start(t, l, never)
	time.Sleep(20 * time.Millisecond)
	if r.events.Load() != 0 {
		t.Fatal("an eventfd nobody wrote reported EPOLLIN")
	}
	l.Call(func() {
		if err := l.Modify(reg, fd, unix.EPOLLOUT|unix.EPOLLET); err != nil {
			t.Error(err)
		}
	})
	deadline := time.Now().Add(2 * time.Second)
	for r.events.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if m := r.mask.Load(); m&unix.EPOLLOUT == 0 {
		t.Fatalf("events %#x after Modify, want EPOLLOUT", m)
	}
}

func TestTokenRoundTripsThroughTheEvent(t *testing.T) {
	for _, tc := range []struct{ slot, gen uint32 }{
		{0, 1}, {1, 1}, {255, 7}, {1<<31 + 5, 1<<31 + 9}, {1<<32 - 2, 1<<32 - 1},
	} {
		tok := makeToken(tc.slot, tc.gen)
		var ev unix.EpollEvent
		tok.put(&ev)
		got := eventToken(&ev)
		if got.slot() != tc.slot || got.gen() != tc.gen {
			t.Errorf("slot %d gen %d came back as slot %d gen %d", tc.slot, tc.gen, got.slot(), got.gen())
		}
		if got == wakeToken {
			t.Errorf("slot %d gen %d reads as the wake-up token", tc.slot, tc.gen)
		}
	}
}
