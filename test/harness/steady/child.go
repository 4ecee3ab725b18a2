package steady

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// envConfig carries a child's Config, as JSON.
const envConfig = "HAIRPIN_STEADY_CLIENT"

// Config is what the client does.
type Config struct {
	// DNS is the server asked ("10.96.0.10:53").
	DNS string `json:"dns"`
	// Hosts are asked for, and requested, each on its own ticker.
	Hosts []string `json:"hosts"`
	// Interval is the pace per host (default 20 ms).
	Interval time.Duration `json:"interval"`
	// Port is the HTTP port requested (default 80).
	Port int `json:"port,omitempty"`
	// KeepAlive sends the requests on keep-alive connections, a pool per
	// host, as a browser or a service's HTTP client does, instead of one
	// new connection with Connection: close each.
	KeepAlive bool `json:"keepAlive,omitempty"`
	// Download, when set, makes the process one download instead.
	Download *Download `json:"download,omitempty"`
}

// Download is one slow GET of a large body, read at Rate bytes/s until
// [Client.Hurry], then as fast as it comes.
type Download struct {
	Addr string `json:"addr"` // "ip:port"
	Host string `json:"host"`
	Path string `json:"path"`
	Rate int64  `json:"rate"`
}

// Timeouts of one operation: a DNS query is one try of 2 s, as the issue's
// client; an HTTP request gets 5 s, curl's --max-time in the dataplane tests,
// but its dial only 1 s: a dropped SYN, which the kernel retransmits after
// 1 s, is a failure, not a slow success.
const (
	dnsTimeout  = 2 * time.Second
	dialTimeout = time.Second
	httpTimeout = 5 * time.Second
)

// Main runs the client that [Start] configured in the environment, until
// SIGTERM (or, for a download, its end), and returns the exit code: the
// body of the steady command.
func Main() int {
	raw, ok := os.LookupEnv(envConfig)
	if !ok {
		fmt.Fprintf(os.Stderr, "steady: %s is not set: this command is started by the tests' steady.Start\n", envConfig)
		return 2
	}
	var cfg Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "steady: %s: %v\n", envConfig, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	out := newEmitter(os.Stdout)
	if cfg.Download != nil {
		hurry := make(chan os.Signal, 1)
		signal.Notify(hurry, syscall.SIGUSR1)
		out.emit(download(ctx, *cfg.Download, hurry))
	} else {
		run(ctx, cfg, out)
	}
	out.flush()
	return 0
}

// emitter writes results as JSON lines, one at a time.
type emitter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	enc *json.Encoder
}

func newEmitter(w io.Writer) *emitter {
	bw := bufio.NewWriter(w)
	return &emitter{w: bw, enc: json.NewEncoder(bw)}
}

func (e *emitter) emit(r Result) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_ = e.enc.Encode(r)
	_ = e.w.Flush()
}

func (e *emitter) flush() {
	e.mu.Lock()
	defer e.mu.Unlock()
	_ = e.w.Flush()
}

// run starts one round per host every interval, each in its own goroutine so
// that a slow answer does not slow the pace, until ctx ends; then it waits
// for the rounds in flight.
func run(ctx context.Context, cfg Config, out *emitter) {
	if cfg.Interval <= 0 {
		cfg.Interval = 20 * time.Millisecond
	}
	if cfg.Port == 0 {
		cfg.Port = 80
	}
	var wg sync.WaitGroup
	for _, host := range cfg.Hosts {
		wg.Add(1)
		send := getter(get)
		if cfg.KeepAlive {
			send = keepAliveGet(newKeepAliveClient())
		}
		go func() {
			defer wg.Done()
			var last lastAddr
			tick := time.NewTicker(cfg.Interval)
			defer tick.Stop()
			var rounds sync.WaitGroup
			defer rounds.Wait()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				rounds.Add(1)
				go func() {
					defer rounds.Done()
					round(cfg, host, &last, send, out)
				}()
			}
		}()
	}
	wg.Wait()
}

// lastAddr is a host's last resolved address: HTTP goes there when this
// round's query failed, as a client with a DNS cache does, so that a DNS
// failure is counted once, as DNS.
type lastAddr struct {
	mu   sync.Mutex
	addr string
}

func (l *lastAddr) swap(a string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a != "" {
		l.addr = a
	}
	return l.addr
}

// getter sends one GET / for host to addr:port and reports it.
type getter func(addr string, port int, host string) Result

// round is one DNS query and one HTTP request for host.
func round(cfg Config, host string, last *lastAddr, get getter, out *emitter) {
	d := query(cfg.DNS, host)
	out.emit(d)
	addr := last.swap(d.Addr)
	if addr == "" {
		out.emit(Result{At: time.Now(), Kind: KindHTTP, Host: host, Fail: FailNoAddress})
		return
	}
	out.emit(get(addr, cfg.Port, host))
}

// query asks server for host's A records, once.
func query(server, host string) Result {
	r := Result{At: time.Now(), Kind: KindDNS, Host: host}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(host), dns.TypeA)
	c := &dns.Client{Timeout: dnsTimeout}
	resp, _, err := c.Exchange(m, server)
	r.Took = time.Since(r.At)
	switch {
	case err != nil:
		r.Fail = classify(err)
	case resp.Rcode != dns.RcodeSuccess:
		r.Fail = FailRcode + " " + dns.RcodeToString[resp.Rcode]
	default:
		for _, rr := range resp.Answer {
			if a, ok := rr.(*dns.A); ok {
				r.Answers = append(r.Answers, a.A.String())
			}
		}
		if len(r.Answers) == 0 {
			r.Fail = FailNoAnswer
		} else {
			r.Addr = r.Answers[0]
		}
	}
	return r
}

// get sends `GET /` for host to addr:port on a new connection and reads
// the whole response: a 200 whose body is the controller's answer for host.
func get(addr string, port int, host string) Result {
	r := Result{At: time.Now(), Kind: KindHTTP, Host: host, Addr: addr}
	resp, body, err := request(net.JoinHostPort(addr, strconv.Itoa(port)), host, "/", httpTimeout, nil)
	r.judge(resp, body, err)
	return r
}

// judge records the outcome of r's request: a 200 whose body is the
// controller's answer for r.Host, or why not.
func (r *Result) judge(resp *http.Response, body []byte, err error) {
	switch {
	case err != nil:
		r.Fail = classify(err)
	case resp.StatusCode != http.StatusOK:
		r.Status, r.Fail = resp.StatusCode, fmt.Sprintf("%s %d", FailStatus, resp.StatusCode)
	case !strings.Contains(string(body), "ok host="+r.Host+" "):
		r.Status, r.Fail = resp.StatusCode, FailBody
	default:
		r.Status = resp.StatusCode
	}
	r.Took = time.Since(r.At)
}

// newKeepAliveClient is one host's client: its connections stay open
// between requests, a dial gets dialTimeout and a request httpTimeout.
func newKeepAliveClient() *http.Client {
	return &http.Client{Timeout: httpTimeout, Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: dialTimeout}).DialContext,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// keepAliveGet is get on c's keep-alive connections. Go's transport sends
// a GET again on a new connection when a reused one closed before any
// response byte (a server's idle close racing the request), as browsers
// do; the request's outcome is the new connection's, and the retry is
// counted (each attempt takes a connection: GotConn).
func keepAliveGet(c *http.Client) getter {
	return func(addr string, port int, host string) Result {
		r := Result{At: time.Now(), Kind: KindHTTP, Host: host, Addr: addr}
		conns := 0
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			if conns == 0 {
				r.Reused = info.Reused
			}
			conns++
		}}
		ctx := httptrace.WithClientTrace(context.Background(), trace)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(addr, strconv.Itoa(port))+"/", nil)
		if err != nil {
			r.judge(nil, nil, err)
			return r
		}
		req.Host = host
		req.Header.Set("User-Agent", "hairpin-steady-keepalive")
		resp, err := c.Do(req)
		var body []byte
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		r.Retries = max(conns-1, 0)
		r.judge(resp, body, err)
		return r
	}
}

// request sends one HTTP/1.1 GET with Connection: close and reads the
// response; body, when set, consumes the body instead of it being returned.
func request(addr, host, path string, timeout time.Duration, body func(io.Reader) error) (*http.Response, []byte, error) {
	conn, err := net.DialTimeout("tcp", addr, min(timeout, dialTimeout))
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, nil, err
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: hairpin-steady\r\nConnection: close\r\n\r\n", path, host); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if body != nil {
		// A download outlives the request timeout; the reader paces it.
		if err := conn.SetDeadline(time.Time{}); err != nil {
			return nil, nil, err
		}
		return resp, nil, body(resp.Body)
	}
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// download reads d's body at d.Rate bytes/s, at full speed once hurried,
// and reports its size and hash.
func download(ctx context.Context, d Download, hurry <-chan os.Signal) Result {
	r := Result{At: time.Now(), Kind: KindDownload, Host: d.Host, Addr: d.Addr}
	h := sha256.New()
	resp, _, err := request(d.Addr, d.Host, d.Path, httpTimeout, func(body io.Reader) error {
		buf := make([]byte, 64<<10)
		for {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			n, err := body.Read(buf)
			h.Write(buf[:n])
			r.Bytes += int64(n)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			select {
			case <-hurry:
				d.Rate = 0
			default:
			}
			if d.Rate > 0 {
				// Sleep until the bytes read so far are due at the rate.
				due := r.At.Add(time.Duration(float64(r.Bytes) / float64(d.Rate) * float64(time.Second)))
				time.Sleep(time.Until(due))
			}
		}
	})
	r.Took = time.Since(r.At)
	if resp != nil {
		r.Status = resp.StatusCode
	}
	r.SHA256 = hex.EncodeToString(h.Sum(nil))
	if err != nil {
		r.Fail = classify(err)
	} else if r.Status != http.StatusOK {
		r.Fail = fmt.Sprintf("%s %d", FailStatus, r.Status)
	}
	return r
}
