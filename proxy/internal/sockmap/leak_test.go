package sockmap

import (
	"fmt"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"
)

func openFDs(t testing.TB) int { return harness.OpenFDs(t) }

// TestManyPairsLeakNothing runs 10,000 request/response connections through
// the kernel and checks that descriptors, goroutines, pairs and both maps'
// entries return to their baseline.
func TestManyPairsLeakNothing(t *testing.T) {
	r := openRelay(t)
	n := 10000
	if testing.Short() {
		n = 500
	}
	front := listen(t)
	back := listen(t)
	go func() { // the upstream: answers ping with pong, then closes
		for {
			c, err := back.AcceptTCP()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4)
				if _, err := io.ReadFull(c, buf); err == nil {
					_, _ = c.Write([]byte("pong"))
				}
			}()
		}
	}()
	oneConn := func() error {
		client, err := net.DialTCP("tcp", nil, front.Addr().(*net.TCPAddr))
		if err != nil {
			return err
		}
		defer client.Close()
		pc, err := front.AcceptTCP()
		if err != nil {
			return err
		}
		up, err := net.DialTCP("tcp", nil, back.Addr().(*net.TCPAddr))
		if err != nil {
			_ = pc.Close()
			return err
		}
		p, err := r.Splice(pc, up, 0)
		if err != nil {
			_ = pc.Close()
			_ = up.Close()
			return err
		}
		_ = client.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := client.Write([]byte("ping")); err != nil {
			return err
		}
		got, err := io.ReadAll(client)
		if err != nil || string(got) != "pong" {
			return fmt.Errorf("client read %q, %v; want pong then EOF", got, err)
		}
		if err := client.CloseWrite(); err != nil {
			return err
		}
		select {
		case <-p.Done():
		case <-time.After(10 * time.Second):
			return fmt.Errorf("pair still open")
		}
		if res := p.Wait(); res != (Result{Reason: ReasonEOF, ToUpstream: 4, ToClient: 4}) {
			return fmt.Errorf("result %+v", res)
		}
		return nil
	}
	settle := func() (int, int) {
		runtime.GC()
		return runtime.NumGoroutine(), openFDs(t)
	}
	for range 20 { // warm up
		if err := oneConn(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // the upstream's handlers return
	g0, fd0 := settle()

	const workers = 4
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := oneConn(); err != nil {
					errs <- fmt.Errorf("connection %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	var g, fd int
	for {
		g, fd = settle()
		if (g <= g0 && fd <= fd0) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if g > g0 || fd > fd0 {
		t.Errorf("after %d connections: %d goroutines (baseline %d), %d fds (baseline %d)", n, g, g0, fd, fd0)
	}
	if p := r.Pairs(); p != 0 {
		t.Errorf("%d pairs still tracked", p)
	}
	assertMapsEmpty(t, r)
}

func listen(t testing.TB) *net.TCPListener {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}
