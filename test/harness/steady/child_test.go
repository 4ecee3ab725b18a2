package steady

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// fakeDNS answers A queries for "ok.test." with addr, REFUSED for
// "refused.test." and nothing at all for anything else.
func fakeDNS(t *testing.T, addr string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		switch q.Question[0].Name {
		case "ok.test.":
			rr, _ := dns.NewRR("ok.test. 5 IN A " + addr)
			m.Answer = append(m.Answer, rr)
		case "refused.test.":
			m.Rcode = dns.RcodeRefused
		default:
			return
		}
		_ = w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

func TestRoundReportsEachOutcomeAsAClientSeesIt(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "other.test" {
			fmt.Fprintf(w, "default backend - 404\n") // a 200 that is not the host's answer
			return
		}
		fmt.Fprintf(w, "ok host=%s client=x controller=y\n", r.Host)
	})}
	go srv.Serve(l)
	defer srv.Close()
	server := fakeDNS(t, "127.0.0.1")

	var buf bytes.Buffer
	out := newEmitter(&buf)
	cfg := Config{DNS: server, Port: port}
	round(cfg, "ok.test", &lastAddr{}, get, out)
	round(cfg, "refused.test", &lastAddr{}, get, out)
	// A host whose last answer is remembered: HTTP still goes there.
	round(cfg, "refused.test", &lastAddr{addr: "127.0.0.1"}, get, out)
	out.flush()
	var got []Result
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var r Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, r)
	}
	want := []struct{ kind, fail string }{
		{KindDNS, ""}, {KindHTTP, ""},
		{KindDNS, FailRcode + " REFUSED"}, {KindHTTP, FailNoAddress},
		{KindDNS, FailRcode + " REFUSED"}, {KindHTTP, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Kind != w.kind || got[i].Fail != w.fail {
			t.Errorf("result %d: %s %q, want %s %q", i, got[i].Kind, got[i].Fail, w.kind, w.fail)
		}
	}
	if !Answered(got[0], "127.0.0.1") || got[1].Status != http.StatusOK {
		t.Errorf("the good round: %+v %+v", got[0], got[1])
	}
	if r := get("127.0.0.1", port, "other.test"); r.Fail != FailBody {
		t.Errorf("a 200 that is not the host's answer: %q, want %q", r.Fail, FailBody)
	}
}

func TestGetNamesRefusedResetAndEmptyReply(t *testing.T) {
	// A port nothing listens on refuses.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedPort := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if r := get("127.0.0.1", refusedPort, "h"); r.Fail != FailRefused {
		t.Errorf("closed port: %q, want %q", r.Fail, FailRefused)
	}
	// A server that closes without a byte gives an empty reply.
	empty, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	go func() {
		for {
			c, err := empty.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 1024)
			_, _ = c.Read(buf)
			c.Close()
		}
	}()
	if r := get("127.0.0.1", empty.Addr().(*net.TCPAddr).Port, "h"); r.Fail != FailEmptyReply {
		t.Errorf("closed without a reply: %q, want %q", r.Fail, FailEmptyReply)
	}
}

func TestRunKeepsThePaceAndStopsWithItsContext(t *testing.T) {
	server := fakeDNS(t, "127.0.0.1")
	var buf bytes.Buffer
	out := newEmitter(&buf)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	run(ctx, Config{DNS: server, Hosts: []string{"ok.test", "refused.test"}, Port: 1}, out)
	dnsResults := strings.Count(buf.String(), `"kind":"dns"`)
	// 2 hosts, 25 rounds each in 500 ms at 20 ms; allow for a slow machine.
	if dnsResults < 20 {
		t.Fatalf("%d DNS results in 500 ms for 2 hosts; want about 50", dnsResults)
	}
}

// TestKeepAliveGetCountsWhatTheTransportRetried holds the keep-alive
// client to what it reports: a second request reuses the first one's
// connection, and a request whose reused connection the server closes
// unanswered is sent again on a new one, a success with one retry.
func TestKeepAliveGetCountsWhatTheTransportRetried(t *testing.T) {
	for _, tc := range []struct {
		name        string
		dropRequest int // the server closes the connection on this request (1-based), unanswered
		wantReused  bool
		wantRetries int
	}{
		{"ReusesTheConnection", 0, true, 0},
		{"RetriesOnANewConnectionWhenTheReusedOneCloses", 2, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, port := rawHTTPServer(t, tc.dropRequest)
			get := keepAliveGet(newKeepAliveClient())
			if r := get(addr, port, "ok.test"); r.Fail != "" || r.Reused || r.Retries != 0 {
				t.Fatalf("first request: %+v; want a success on a new connection", r)
			}
			r := get(addr, port, "ok.test")
			if r.Fail != "" || r.Reused != tc.wantReused || r.Retries != tc.wantRetries {
				t.Errorf("second request: fail %q reused %v retries %d; want a success, reused %v, %d retries", r.Fail, r.Reused, r.Retries, tc.wantReused, tc.wantRetries)
			}
		})
	}
}

// rawHTTPServer answers each keep-alive request with the controller's
// answer, but closes the connection unanswered on request number drop.
func rawHTTPServer(t *testing.T, drop int) (string, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var mu sync.Mutex
	n := 0
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					mu.Lock()
					n++
					this := n
					mu.Unlock()
					if this == drop {
						return
					}
					body := "ok host=" + req.Host + " client=x controller=y\n"
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				}
			}()
		}
	}()
	a := l.Addr().(*net.TCPAddr)
	return a.IP.String(), a.Port
}
