package netns_test

import (
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

func TestVethConnectsTwoNamespacesAndCloseRemovesBoth(t *testing.T) {
	harness.RequireRoot(t, "netns", "ip")
	a, err := netns.New("test-a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := netns.New("test-b")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := netns.Veth(a, "eth0", b, "peer0"); err != nil {
		t.Fatal(err)
	}
	must(t, a.AddAddr("eth0", netip.MustParsePrefix("198.18.250.1/30")))
	must(t, b.AddAddr("peer0", netip.MustParsePrefix("198.18.250.2/30")))

	l, err := b.Listen("tcp", "198.18.250.2:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Write([]byte("hello from b"))
		c.Close()
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	c, err := a.DialContext(ctx, "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(c)
	c.Close()
	l.Close()
	if string(got) != "hello from b" {
		t.Fatalf("got %q through the veth", got)
	}

	// The root namespace has neither the address nor the link.
	if out, _ := exec.Command("ip", "-o", "addr").Output(); strings.Contains(string(out), "198.18.250.") {
		t.Fatalf("the root namespace holds a test address:\n%s", out)
	}
	if links, _ := a.Links(); !slices.Contains(links, "eth0") {
		t.Fatalf("links of %s: %v", a.Name, links)
	}

	must(t, a.Close())
	must(t, b.Close())
	for _, n := range []*netns.NS{a, b} {
		if _, err := os.Stat(n.Path()); !os.IsNotExist(err) {
			t.Errorf("%s still exists after Close", n.Name)
		}
	}
}

func TestForwarderBridgesRootLoopbackIntoANamespace(t *testing.T) {
	harness.RequireRoot(t, "netns", "ip")
	n, err := netns.New("test-fwd")
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	inner, err := n.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	go func() {
		for {
			c, err := inner.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	// The same address in the root namespace is someone else's (or nobody's).
	outer, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fwd := netns.Forward(outer, func(ctx context.Context) (net.Conn, error) {
		return n.DialContext(ctx, "tcp", inner.Addr().String())
	})
	defer fwd.Close()

	c, err := net.Dial("tcp", fwd.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	payload := strings.Repeat("x", 1<<20)
	go func() { c.Write([]byte(payload)); c.(*net.TCPConn).CloseWrite() }()
	got, err := io.ReadAll(c)
	c.Close()
	if err != nil || len(got) != len(payload) {
		t.Fatalf("echo through the forwarder: %d of %d bytes, %v", len(got), len(payload), err)
	}
	must(t, fwd.Close())
}

func TestSweepRemovesOnlyNamespacesOfDeadCreators(t *testing.T) {
	harness.RequireRoot(t, "netns", "ip")
	// A creator that is certainly gone: a child that has exited.
	cmd := exec.Command("true")
	must(t, cmd.Run())
	dead := "hpt" + strconv.Itoa(cmd.Process.Pid) + "-stale"
	if out, err := exec.Command("ip", "netns", "add", dead).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	defer exec.Command("ip", "netns", "delete", dead).Run()
	live, err := netns.New("test-live")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()

	removed, err := netns.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, dead) {
		t.Errorf("netns.Sweep removed %v; want %s among them", removed, dead)
	}
	if _, err := os.Stat(live.Path()); err != nil {
		t.Errorf("netns.Sweep removed this process's own namespace: %v", err)
	}
}

func TestCloseKillsWhatRunsInside(t *testing.T) {
	harness.RequireRoot(t, "netns", "ip")
	n, err := netns.New("test-kill")
	if err != nil {
		t.Fatal(err)
	}
	cmd := n.Command("sleep", "300")
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids, _ := n.Pids()
		if len(pids) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(t, n.Close())
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the process in the namespace survived Close")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
