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
// client; an HTTP request gets 5 s, curl's --max-time in the dataplane tests.
const (
	dnsTimeout  = 2 * time.Second
	httpTimeout = 5 * time.Second
)

// RunIfChild runs the client and exits when this process was started as
// one ([Start]); otherwise it returns at once. TestMain calls it first.
func RunIfChild() {
	raw, ok := os.LookupEnv(envConfig)
	if !ok {
		return
	}
	var cfg Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "steady: %s: %v\n", envConfig, err)
		os.Exit(2)
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
	os.Exit(0)
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
					round(cfg, host, &last, out)
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

// round is one DNS query and one HTTP request for host.
func round(cfg Config, host string, last *lastAddr, out *emitter) {
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
	switch {
	case err != nil:
		r.Fail = classify(err)
	case resp.StatusCode != http.StatusOK:
		r.Status, r.Fail = resp.StatusCode, fmt.Sprintf("%s %d", FailStatus, resp.StatusCode)
	case !strings.Contains(string(body), "ok host="+host+" "):
		r.Status, r.Fail = resp.StatusCode, FailBody
	default:
		r.Status = resp.StatusCode
	}
	r.Took = time.Since(r.At)
	return r
}

// request sends one HTTP/1.1 GET with Connection: close and reads the
// response; body, when set, consumes the body instead of it being returned.
func request(addr, host, path string, timeout time.Duration, body func(io.Reader) error) (*http.Response, []byte, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
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
