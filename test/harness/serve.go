package harness

import (
	"net"
	"testing"
)

// ServeTCP listens on a free port of 127.0.0.1 and runs handle on a
// goroutine of its own for every accepted connection, closing the
// connection when handle returns. The listener closes with the test; the
// address is returned.
func ServeTCP(t testing.TB, handle func(*net.TCPConn)) string {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatalf("harness: listen: %v", err)
	}
	Serve(t, ln, handle)
	return ln.Addr().String()
}

// Serve is ServeTCP on a TCP listener of the caller's, such as one opened
// in a network namespace.
func Serve(t testing.TB, ln net.Listener, handle func(*net.TCPConn)) {
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c.(*net.TCPConn))
			}()
		}
	}()
}
