package harness

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Probe makes one readiness check and returns nil when the thing is ready.
// It must honour ctx.
type Probe func(ctx context.Context) error

// Poll runs probe until it returns nil or ctx ends, backing off from 10 ms to
// 200 ms between attempts. On timeout the error wraps the probe's last error.
func Poll(ctx context.Context, probe Probe) error {
	delay := 10 * time.Millisecond
	for {
		err := probe(ctx)
		if err == nil {
			return nil
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("not ready (%w): last error: %w", context.Cause(ctx), err)
		case <-timer.C:
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// PollEvery runs probe every interval until it returns nil or ctx ends. Use
// it instead of [Poll] where the moment of success is measured (propagation
// delays), so that the backoff does not add to it.
func PollEvery(ctx context.Context, interval time.Duration, probe Probe) error {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		err := probe(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready (%w): last error: %w", context.Cause(ctx), err)
		case <-ticker.C:
		}
	}
}

// PollGet polls get, a client's Get such as
// Clientset.CoreV1().Services(ns).Get, until it finds the object name, and
// returns it. A controller writes its objects one request after another,
// and a loaded machine can leave seconds between two of them: having waited
// for one says nothing of the others, so a test waits for each object a
// controller writes before it reads it.
func PollGet[T any](ctx context.Context, get func(context.Context, string, metav1.GetOptions) (T, error), name string) (T, error) {
	var obj T
	err := Poll(ctx, func(ctx context.Context) error {
		var err error
		obj, err = get(ctx, name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		var none T
		return none, err
	}
	return obj, nil
}

// EventuallyInterval is how often [Eventually] checks its condition.
const EventuallyInterval = 5 * time.Millisecond

// Eventually checks cond every [EventuallyInterval] until it holds, and
// fails t naming what was awaited once timeout has passed. It is for
// in-process state (an index, a metric, a log buffer); use [Poll] with a
// [Probe] for servers.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(EventuallyInterval)
	}
}

// TCPProbe is ready when addr ("host:port") accepts a TCP connection.
func TCPProbe(addr string) Probe {
	return func(ctx context.Context) error {
		var d net.Dialer
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("dial %s: %w", addr, err)
		}
		return c.Close()
	}
}

// TCPClosedProbe is ready when addr refuses TCP connections, e.g. after a
// server was stopped.
func TCPClosedProbe(addr string) Probe {
	return func(ctx context.Context) error {
		if TCPProbe(addr)(ctx) == nil {
			return fmt.Errorf("%s still accepts connections", addr)
		}
		return nil
	}
}

// HTTPProbe is ready when a GET of url returns 200, such as the coredns
// `ready` plugin's http://ADDR/ready or the proxy's /readyz. Certificates
// of https URLs are not verified.
func HTTPProbe(url string) Probe {
	client := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // readiness only
			DisableKeepAlives: true,
			Proxy:             nil,
		},
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("request %s: %w", url, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("GET %s: %w", url, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %q", url, resp.Status, body)
		}
		return nil
	}
}

// DNSProbe is ready when the DNS server at addr ("host:port") answers a UDP
// query for name (e.g. "." or "example.org.") and type qtype with any
// response code: the server is up and serving, whatever it knows.
func DNSProbe(addr, name string, qtype uint16) Probe {
	return func(ctx context.Context) error {
		_, err := Exchange(ctx, addr, name, qtype)
		return err
	}
}

// Exchange sends one UDP query for name and qtype to the DNS server at addr
// and returns its reply. Truncated replies are retried over TCP.
func Exchange(ctx context.Context, addr, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.SetEdns0(4096, false)
	c := &dns.Client{Net: "udp", Timeout: time.Second}
	r, _, err := c.ExchangeContext(ctx, m, addr)
	if err == nil && r.Truncated {
		c.Net = "tcp"
		r, _, err = c.ExchangeContext(ctx, m, addr)
	}
	if err != nil {
		return nil, fmt.Errorf("query %s %s at %s: %w", name, dns.TypeToString[qtype], addr, err)
	}
	return r, nil
}

// errExited is the cause of a [Process] context when the child exited.
var errExited = errors.New("process exited")
