package harness_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	proxyproto "github.com/pires/go-proxyproto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

func TestARecordsKeepOnlyTheAFamily(t *testing.T) {
	m := new(dns.Msg)
	for _, s := range []string{
		"a.example.com. 5 IN CNAME b.example.com.",
		"b.example.com. 5 IN A 127.77.0.10",
		"b.example.com. 5 IN AAAA fd00::10",
		"b.example.com. 5 IN A 127.77.0.11",
		"b.example.com. 5 IN TXT \"127.0.0.1\"",
	} {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		m.Answer = append(m.Answer, rr)
	}
	if got, want := harness.ARecords(m), []netip.Addr{netip.MustParseAddr("127.77.0.10"), netip.MustParseAddr("127.77.0.11")}; !slices.Equal(got, want) {
		t.Errorf("ARecords = %v, want %v", got, want)
	}
	if got := harness.ARecords(nil); got != nil {
		t.Errorf("ARecords(nil) = %v", got)
	}
}

func TestAProbeWaitsForExactlyTheWantedAddresses(t *testing.T) {
	ctx := ctxTimeout(t, 10*time.Second)
	addr := harness.FreeAddr(t, "127.0.0.1")
	// The answer changes from one address to two after a few queries.
	var queries atomic.Int32
	srv := &dns.Server{Addr: addr, Net: "udp", Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		ips := []string{"127.0.0.1"}
		if queries.Add(1) > 3 {
			ips = []string{"127.0.0.3", "127.0.0.2"}
		}
		for _, ip := range ips {
			rr, _ := dns.NewRR(r.Question[0].Name + " 5 IN A " + ip)
			m.Answer = append(m.Answer, rr)
		}
		w.WriteMsg(m)
	})}
	go srv.ListenAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	if err := harness.Poll(ctx, harness.DNSProbe(addr, "x.example.", dns.TypeA)); err != nil {
		t.Fatal(err)
	}

	probe := harness.AProbe(addr, "x.example", netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3"))
	if err := probe(ctx); err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("first probe = %v, want an error naming the last answer", err)
	}
	if err := harness.PollEvery(ctx, time.Millisecond, probe); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := harness.PollEvery(short, time.Millisecond, harness.AProbe(addr, "x.example", netip.MustParseAddr("127.0.0.2")))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a subset of the answer passed, or the error does not wrap the deadline: %v", err)
	}
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	harness.Eventually(t, 5*time.Second, "the third check", func() bool { return n.Add(1) >= 3 })
	if n.Load() != 3 {
		t.Fatalf("checked %d times, want 3", n.Load())
	}
}

// TestPollGetWaitsForTheObject: an object its controller has not written
// yet is waited for; one that never comes ends in the context's error and
// the last Get's, with no object.
func TestPollGetWaitsForTheObject(t *testing.T) {
	for _, tc := range []struct {
		name    string
		foundAt int32 // the Get that finds the object; 0: none does
	}{
		{name: "FoundAtOnce", foundAt: 1},
		{name: "FoundOnTheThirdGet", foundAt: 3},
		{name: "NeverFound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gets atomic.Int32
			get := func(_ context.Context, name string, _ metav1.GetOptions) (*corev1.ConfigMap, error) {
				if n := gets.Add(1); tc.foundAt == 0 || n < tc.foundAt {
					// As client-go does: an empty object beside the error.
					return &corev1.ConfigMap{}, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
				}
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
			}
			timeout := 10 * time.Second
			if tc.foundAt == 0 {
				timeout = 200 * time.Millisecond
			}
			cm, err := harness.PollGet(ctxTimeout(t, timeout), get, "app")
			if tc.foundAt == 0 {
				if !errors.Is(err, context.DeadlineExceeded) || !apierrors.IsNotFound(err) || cm != nil {
					t.Fatalf("PollGet = %v, %v; want no object and an error wrapping the deadline and the NotFound", cm, err)
				}
				return
			}
			if err != nil || cm.Name != "app" || gets.Load() != tc.foundAt {
				t.Fatalf("PollGet = %v, %v after %d Gets; want the object at Get %d", cm, err, gets.Load(), tc.foundAt)
			}
		})
	}
}

func TestUpstreamRecordsTheHeaderAndEchoes(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "::1"} {
		t.Run(host, func(t *testing.T) {
			u := harness.StartEchoUpstream(t, host)
			if u.Port() != harness.PortOf(t, u.Addr()) {
				t.Fatalf("Port %d, Addr %s", u.Port(), u.Addr())
			}
			c, err := net.Dial("tcp", u.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			src := netip.MustParseAddrPort("203.0.113.7:41234")
			dst := netip.MustParseAddrPort("127.77.0.10:80")
			hdr := proxyproto.HeaderProxyFromAddrs(1, net.TCPAddrFromAddrPort(src), net.TCPAddrFromAddrPort(dst))
			if _, err := hdr.WriteTo(c); err != nil {
				t.Fatal(err)
			}
			io.WriteString(c, "ping")
			c.(*net.TCPConn).CloseWrite()
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			b, err := io.ReadAll(c)
			if err != nil || string(b) != "ping" {
				t.Fatalf("echo: %q, %v", b, err)
			}
			got := u.NextHeader(t)
			if got.SourceAddr.String() != src.String() || got.DestinationAddr.String() != dst.String() {
				t.Fatalf("header %s -> %s, want %s -> %s", got.SourceAddr, got.DestinationAddr, src, dst)
			}
		})
	}
}

// TestUpstreamSetsProbesAside: a readiness probe (nothing sent, a LOCAL v2
// header, PROXY UNKNOWN) never reaches the handler; its bytes go to Probes.
func TestUpstreamSetsProbesAside(t *testing.T) {
	u := harness.StartUpstream(t, "127.0.0.1", func(harness.UpstreamConn) { t.Error("handler ran for a probe") })
	local, err := (&proxyproto.Header{Version: 2, Command: proxyproto.LOCAL, TransportProtocol: proxyproto.UNSPEC}).Format()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sent []byte
	}{
		{"connect and close", nil},
		{"LOCAL v2", local},
		{"UNKNOWN v1", []byte("PROXY UNKNOWN\r\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", u.Addr())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(tc.sent); err != nil {
				t.Fatal(err)
			}
			c.Close()
			select {
			case got := <-u.Probes():
				if string(got) != string(tc.sent) {
					t.Fatalf("probe bytes %q, want %q", got, tc.sent)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no probe recorded")
			}
		})
	}
	u.Close() // waits for the connections' goroutines
	u.Close() // idempotent
}

func TestWriteFileCanListenAndPortOf(t *testing.T) {
	path := harness.WriteFile(t, t.TempDir(), "Corefile", ". {\n}\n")
	if b, err := os.ReadFile(path); err != nil || string(b) != ". {\n}\n" {
		t.Fatalf("WriteFile: %q, %v", b, err)
	}
	ip := harness.FreeLoopbackIP(t)
	port := harness.FreePort(t, ip.String())
	if !harness.CanListen(ip, port) {
		t.Fatalf("CanListen(%s, %d) = false on a free port", ip, port)
	}
	l, err := net.Listen("tcp", netip.AddrPortFrom(ip, uint16(port)).String())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if harness.CanListen(ip, port) {
		t.Fatalf("CanListen(%s, %d) = true on a bound port", ip, port)
	}
	if got := harness.PortOf(t, l.Addr().String()); got != port {
		t.Fatalf("PortOf(%s) = %d", l.Addr(), got)
	}
}

func TestNginxWithoutProxyProtocolServesClientsDirectly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nginx")
	}
	n := harness.StartNginx(t, harness.NginxOptions{Name: "nginx-legacy", WithoutProxyProtocol: true})
	if n.ProxyProtocol {
		t.Fatal("ProxyProtocol = true")
	}
	c, err := net.DialTimeout("tcp", n.HTTPAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: legacy.example.com\r\nConnection: close\r\n\r\n")
	b, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(b), "HTTP/1.1 200") {
		t.Fatalf("response %q", b)
	}
	e, err := n.WaitAccessLog(ctxTimeout(t, 5*time.Second), func(e harness.AccessLogEntry) bool { return e.Host == "legacy.example.com" })
	if err != nil {
		t.Fatal(err)
	}
	local := c.LocalAddr().(*net.TCPAddr).IP.String()
	if e.RemoteAddr != local || e.ProxyProtocolAddr != "" {
		t.Fatalf("access log %+v: want remote_addr %s and no PROXY address", e, local)
	}
}

func TestParseMetricsAndMetricValue(t *testing.T) {
	text := `# HELP coredns_hairpin_hosts_rejected Distinct hosts never answered.
# TYPE coredns_hairpin_hosts_rejected gauge
coredns_hairpin_hosts_rejected{cache="ab12",reason="outside_zones"} 1
coredns_hairpin_hosts_rejected{cache="cd34",reason="outside_zones"} 2
coredns_hairpin_hosts_rejected{cache="ab12",reason="invalid"} 0
odd{path="a\"b\\c,d}"} 3 1700000000000
up 1
`
	samples, err := harness.ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 5 {
		t.Fatalf("%d samples, want 5: %+v", len(samples), samples)
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
		found  bool
	}{
		{"coredns_hairpin_hosts_rejected", map[string]string{"reason": "outside_zones"}, 3, true},
		{"coredns_hairpin_hosts_rejected", map[string]string{"reason": "invalid"}, 0, true},
		{"coredns_hairpin_hosts_rejected", map[string]string{"reason": "other"}, 0, false},
		{"odd", map[string]string{"path": `a"b\c,d}`}, 3, true},
		{"up", nil, 1, true},
	} {
		got, found := harness.MetricValue(samples, tc.name, tc.labels)
		if got != tc.want || found != tc.found {
			t.Errorf("MetricValue(%s, %v) = %v, %v; want %v, %v", tc.name, tc.labels, got, found, tc.want, tc.found)
		}
	}
	for _, bad := range []string{"novalue", `x{a="unterminated} 1`, `x{a} 1`, "x notanumber"} {
		if _, err := harness.ParseMetrics(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseMetrics(%q) succeeded", bad)
		}
	}
}
