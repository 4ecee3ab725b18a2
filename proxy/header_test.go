package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	proxyproto "github.com/pires/go-proxyproto"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// ap parses "ip:port", zones included.
func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func TestBuildHeaderRoundTripsThroughProxyprotoReader(t *testing.T) {
	tests := []struct {
		name          string
		client, local netip.AddrPort
		dest          netip.Addr // Route.DestAddr; zero: the local address
		headerPort    int
		wantProto     proxyproto.AddressFamilyAndProtocol
		wantSrc       string
		wantDst       string
	}{
		{"ipv4", ap("127.0.0.1:40000"), ap("127.0.0.2:8080"), netip.Addr{}, 80,
			proxyproto.TCPv4, "127.0.0.1:40000", "127.0.0.2:80"},
		{"ipv6", ap("[::1]:40000"), ap("[::1]:8443"), netip.Addr{}, 443,
			proxyproto.TCPv6, "[::1]:40000", "[::1]:443"},
		// A dual-stack listener reports IPv4 peers as ::ffff:a.b.c.d; ingress
		// must still see TCP4 with plain IPv4 addresses.
		{"ipv4-mapped becomes TCP4", ap("[::ffff:10.0.0.7]:40000"),
			ap("[::ffff:10.244.1.5]:8080"), netip.Addr{}, 80,
			proxyproto.TCPv4, "10.0.0.7:40000", "10.244.1.5:80"},
		{"families differ after unmapping fall back to TCP6", ap("[::ffff:10.0.0.7]:40000"),
			ap("[fd00::10]:8080"), netip.Addr{}, 80,
			proxyproto.TCPv6, "[::ffff:10.0.0.7]:40000", "[fd00::10]:80"},
		{"zone dropped", ap("[fe80::1%eth0]:1234"),
			ap("[fe80::2%eth0]:8080"), netip.Addr{}, 80,
			proxyproto.TCPv6, "[fe80::1]:1234", "[fe80::2]:80"},
		// dest-addr: the local address (the pod IP after DNAT) is replaced.
		{"dest-addr replaces the local address", ap("10.0.0.7:40000"), ap("10.244.1.5:8080"),
			netip.MustParseAddr("203.0.113.10"), 443,
			proxyproto.TCPv4, "10.0.0.7:40000", "203.0.113.10:443"},
		{"dest-addr given IPv4-mapped stays TCP4", ap("10.0.0.7:40000"), ap("10.244.1.5:8080"),
			netip.MustParseAddr("::ffff:203.0.113.10"), 443,
			proxyproto.TCPv4, "10.0.0.7:40000", "203.0.113.10:443"},
		{"IPv4 dest-addr for an IPv6 client is mapped", ap("[fd00::7]:40000"), ap("[fd00::5]:8080"),
			netip.MustParseAddr("203.0.113.10"), 443,
			proxyproto.TCPv6, "[fd00::7]:40000", "[::ffff:203.0.113.10]:443"},
		{"IPv6 dest-addr for an IPv4 client maps the client", ap("10.0.0.7:40000"), ap("10.244.1.5:8080"),
			netip.MustParseAddr("2001:db8::10"), 443,
			proxyproto.TCPv6, "[::ffff:10.0.0.7]:40000", "[2001:db8::10]:443"},
	}
	for _, tc := range tests {
		for _, version := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/v%d", tc.name, version), func(t *testing.T) {
				h, err := buildHeader(version, tc.client, tc.local, tc.dest, tc.headerPort)
				if err != nil {
					t.Fatalf("buildHeader: %v", err)
				}
				var buf bytes.Buffer
				if _, err := h.WriteTo(&buf); err != nil {
					t.Fatalf("WriteTo: %v", err)
				}
				got, err := proxyproto.Read(bufio.NewReader(&buf))
				if err != nil {
					t.Fatalf("proxyproto.Read(%q): %v", buf.String(), err)
				}
				if got.Version != byte(version) || got.Command != proxyproto.PROXY || got.TransportProtocol != tc.wantProto {
					t.Fatalf("got version %d command %#x transport %#x, want v%d PROXY %#x",
						got.Version, byte(got.Command), byte(got.TransportProtocol), version, byte(tc.wantProto))
				}
				src, dst, ok := got.TCPAddrs()
				if !ok {
					t.Fatal("header carries no TCP addresses")
				}
				if ipPortString(src) != tc.wantSrc || ipPortString(dst) != tc.wantDst {
					t.Fatalf("got %s -> %s, want %s -> %s", ipPortString(src), ipPortString(dst), tc.wantSrc, tc.wantDst)
				}
			})
		}
	}
}

// ipPortString prints mapped addresses as ::ffff:a.b.c.d when they came in a
// TCP6 header (net.IP.String would hide that).
func ipPortString(a *net.TCPAddr) string {
	ip, _ := netipFromIP(a.IP)
	return net.JoinHostPort(ip, strconv.Itoa(a.Port))
}

func netipFromIP(ip net.IP) (string, bool) {
	if len(ip) == net.IPv4len {
		return ip.String(), true
	}
	if v4 := ip.To4(); v4 != nil {
		return "::ffff:" + v4.String(), true
	}
	return ip.String(), true
}

func TestBuildHeaderRefusesInvalidAddresses(t *testing.T) {
	tests := []struct {
		name          string
		client, local netip.AddrPort
	}{
		{"no addresses", netip.AddrPort{}, netip.AddrPort{}},
		{"no client address", netip.AddrPort{}, ap("127.0.0.1:2")},
		{"no local address", ap("127.0.0.1:1"), netip.AddrPort{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := buildHeader(1, tc.client, tc.local, netip.Addr{}, 80)
			if !errors.Is(err, errNotTCP) {
				t.Fatalf("got %v, want errNotTCP", err)
			}
		})
	}
}

// TestProxyWritesHeaderWithClientAndLocalAddress checks the header as the
// upstream parses it, end to end, for both versions and both families. The
// destination is the accepted socket's local address; here, on loopback
// without DNAT, that equals the address the client dialled, but in a cluster
// it is the proxy pod's IP, not the Service ClusterIP.
func TestProxyWritesHeaderWithClientAndLocalAddress(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "::1"} {
		for _, version := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/v%d", host, version), func(t *testing.T) {
				up := harness.StartUpstream(t, host, harness.Echo)
				s := startProxy(t, testConfig(up.Addr(), func(c *Config) {
					c.ProxyProtocol = version
					c.Routes[0].Listen = net.JoinHostPort(host, "0")
				}))
				c := dialProxy(t, s, "r")
				if _, err := c.Write([]byte("hello")); err != nil {
					t.Fatal(err)
				}
				_ = c.CloseWrite()
				body, err := io.ReadAll(c)
				if err != nil || string(body) != "hello" {
					t.Fatalf("echo: %q, %v", body, err)
				}
				h := up.NextHeader(t)
				want := proxyproto.TCPv4
				if host == "::1" {
					want = proxyproto.TCPv6
				}
				if h.Version != byte(version) || h.TransportProtocol != want || h.Command != proxyproto.PROXY {
					t.Fatalf("header v%d %#x %#x, want v%d %#x PROXY", h.Version, byte(h.TransportProtocol), byte(h.Command), version, byte(want))
				}
				src, dst, _ := h.TCPAddrs()
				local := c.LocalAddr().(*net.TCPAddr)
				if !src.IP.Equal(local.IP) || src.Port != local.Port {
					t.Errorf("source %v, want the client's address %v", src, local)
				}
				remote := c.RemoteAddr().(*net.TCPAddr)
				if !dst.IP.Equal(remote.IP) {
					t.Errorf("destination IP %v, want the accepted socket's local address %v", dst.IP, remote.IP)
				}
				if dst.Port != up.Port() {
					t.Errorf("destination port %d, want the upstream port %d by default", dst.Port, up.Port())
				}
			})
		}
	}
}

// TestDestAddrOverrideIsWritten: a route's dest-addr replaces the local
// address, as the load balancer would write its public IP.
func TestDestAddrOverrideIsWritten(t *testing.T) {
	up := harness.StartUpstream(t, "127.0.0.1", harness.Echo)
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.Routes[0].DestAddr = netip.MustParseAddr("203.0.113.10") }))
	c := dialProxy(t, s, "r")
	_ = c.CloseWrite()
	_, _ = io.ReadAll(c)
	_, dst, _ := up.NextHeader(t).TCPAddrs()
	if got := dst.IP.String(); got != "203.0.113.10" || dst.Port != up.Port() {
		t.Fatalf("destination %v, want 203.0.113.10:%d", dst, up.Port())
	}
}

func TestHeaderPortOverrideIsWritten(t *testing.T) {
	up := harness.StartUpstream(t, "127.0.0.1", harness.Echo)
	r := Route{Name: "r", Listen: "127.0.0.1:0", Upstream: up.Addr(), HeaderPort: 443}
	s := startProxy(t, testConfig(up.Addr(), func(c *Config) { c.Routes = []Route{r} }))
	c := dialProxy(t, s, "r")
	_ = c.CloseWrite()
	_, _ = io.ReadAll(c)
	_, dst, _ := up.NextHeader(t).TCPAddrs()
	if dst.Port != 443 {
		t.Fatalf("destination port %d, want 443 from header-port", dst.Port)
	}
}

// TestClientFirstBytesTravelWithHeader: what the client sent before the
// upstream dial completed leaves in the header's write, so the upstream's
// first read holds the header and the request together.
func TestClientFirstBytesTravelWithHeader(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	first := make(chan []byte, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			n, _ := c.Read(buf)
			_ = c.Close()
			if h, err := proxyproto.Read(bufio.NewReader(bytes.NewReader(buf[:n]))); err == nil && h.Command.IsLocal() {
				continue // the readiness check
			}
			first <- buf[:n]
			return
		}
	}()
	sent := make(chan struct{})
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		<-sent // the client's request is in the proxy's socket by now
		time.Sleep(20 * time.Millisecond)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	s := startProxy(t, testConfig(ln.Addr().String(), func(c *Config) { c.ReadyInterval = time.Hour }), withDialFunc(dial))
	c := dialProxy(t, s, "r")
	const req = "GET / HTTP/1.1\r\nHost: app.example.com\r\n\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	close(sent)
	select {
	case got := <-first:
		hdr, err := proxyproto.Read(bufio.NewReader(bytes.NewReader(got)))
		if err != nil {
			t.Fatalf("first read %q: %v", got, err)
		}
		if !bytes.HasSuffix(got, []byte(req)) || hdr.Command != proxyproto.PROXY {
			t.Fatalf("first read %q, want the header and then %q", got, req)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("upstream read nothing")
	}
}

// TestServerFirstProtocolIsNotDelayed: the proxy never waits for client
// bytes before the header, so a protocol where the server speaks first
// (SMTP, MySQL) works.
func TestServerFirstProtocolIsNotDelayed(t *testing.T) {
	up := harness.StartUpstream(t, "127.0.0.1", func(uc harness.UpstreamConn) {
		_, _ = uc.Conn.Write([]byte("220 ready\r\n"))
		harness.Echo(uc)
	})
	s := startProxy(t, testConfig(up.Addr()))
	c := dialProxy(t, s, "r")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "220 ready\r\n" {
		t.Fatalf("greeting %q, %v", line, err)
	}
}
