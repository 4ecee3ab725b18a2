package proxy

import (
	"bufio"
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/pires/go-proxyproto"
)

// FuzzBuildHeader builds headers from arbitrary client and local addresses
// (any family, mapped or not, with zones) and checks that what is written
// reads back as the same PROXY command over TCP, or is refused: the proxy
// never sends a header that misstates or drops the client's address.
func FuzzBuildHeader(f *testing.F) {
	f.Add([]byte{192, 0, 2, 1}, uint16(40000), []byte{127, 77, 0, 10}, uint16(8080), []byte{}, uint16(443), 1)
	ip := func(s string) []byte { return []byte(net.ParseIP(s)) }
	f.Add(ip("::ffff:192.0.2.1"), uint16(1), ip("fd00::1"), uint16(80), ip("203.0.113.7")[12:], uint16(80), 2)
	f.Add(ip("fe80::1"), uint16(65535), []byte{10, 0, 0, 1}, uint16(0), []byte{}, uint16(1), 2)
	f.Fuzz(func(t *testing.T, src []byte, sport uint16, local []byte, lport uint16, dest []byte, hport uint16, version int) {
		version = 1 + (version & 1)
		sa, _ := netip.AddrFromSlice(src)
		if sa.Is6() {
			sa = sa.WithZone("eth0")
		}
		la, _ := netip.AddrFromSlice(local)
		client, loc := netip.AddrPortFrom(sa, sport), netip.AddrPortFrom(la, lport)
		var d netip.Addr
		if a, ok := netip.AddrFromSlice(dest); ok {
			d = a
		}
		h, err := buildHeader(version, client, loc, d, int(hport))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if _, err := h.WriteTo(&buf); err != nil {
			t.Fatalf("a built header does not serialise: %v (%+v)", err, h)
		}
		got, err := proxyproto.Read(bufio.NewReader(&buf))
		if err != nil {
			t.Fatalf("a written header does not parse: %v (%q)", err, buf.Bytes())
		}
		if got.Command != proxyproto.PROXY {
			t.Fatalf("command %v, want PROXY", got.Command)
		}
		gs, ok := got.SourceAddr.(*net.TCPAddr)
		if !ok {
			t.Fatalf("source %T, want TCP", got.SourceAddr)
		}
		want, _ := netip.AddrFromSlice(src)
		if gotIP, _ := netip.AddrFromSlice(gs.IP); gotIP.Unmap() != want.Unmap().WithZone("") || gs.Port != int(sport) {
			t.Fatalf("source %v:%d in the header, client was %v:%d", gs.IP, gs.Port, want, sport)
		}
	})
}
