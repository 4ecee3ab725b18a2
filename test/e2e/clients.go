package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
)

// Dig asks the DNS server at server ("ip:port") for name and qtype with the
// real dig and returns its output, trimmed; opts go before the name (e.g.
// "+short").
func Dig(ctx context.Context, server, name, qtype string, opts ...string) (string, error) {
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		return "", fmt.Errorf("dig: server %q: %w", server, err)
	}
	args := append([]string{"@" + host, "-p", port, "+time=2", "+tries=1"}, opts...)
	args = append(args, name, qtype)
	cmd := exec.CommandContext(ctx, "dig", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("dig %s: %w: %s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// CurlRequest is one curl run. curl cannot resolve through a DNS server of
// our choosing (--dns-servers needs a c-ares build, which Debian's is not),
// so the caller resolves the name with [Dig] against our CoreDNS first and
// pins the answer with --resolve: the same connection a client that used
// that CoreDNS would open, with the real host name in the URL, the SNI and
// the Host header.
type CurlRequest struct {
	// Scheme is "http" or "https"; Host the name in the URL.
	Scheme, Host string
	// IP is the address Host resolved to; Port the port dialled there.
	IP   netip.Addr
	Port int
	// CACert is the PEM file curl trusts (nginx's self-signed certificate).
	CACert string
	// Source, when valid, is the local address curl connects from
	// (--interface), so that the test knows the client's real address.
	Source netip.Addr
}

// URL returns the request's URL, without the port when it is the scheme's.
func (r CurlRequest) URL() string {
	host := r.Host
	if !(r.Scheme == "http" && r.Port == 80) && !(r.Scheme == "https" && r.Port == 443) {
		host = net.JoinHostPort(host, strconv.Itoa(r.Port))
	}
	return r.Scheme + "://" + host + "/"
}

// Args returns curl's arguments.
func (r CurlRequest) Args() []string {
	args := []string{"-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", "--noproxy", "*",
		"--resolve", fmt.Sprintf("%s:%d:%s", r.Host, r.Port, r.IP)}
	if r.CACert != "" {
		args = append(args, "--cacert", r.CACert)
	}
	if r.Source.IsValid() {
		args = append(args, "--interface", r.Source.String())
	}
	return append(args, r.URL())
}

// CurlResult is what curl printed and how it exited.
type CurlResult struct {
	// Status is the HTTP status ("200"), or "000" when there was no response.
	Status string
	// Stderr is curl's error message, if any.
	Stderr string
	// ExitCode is curl's exit status (0 on success; 52 empty reply, 35 TLS
	// handshake failure, 56 receive failure, ...).
	ExitCode int
}

// Curl runs curl for r. The error is only about running curl; a failed
// request is a CurlResult with a non-zero ExitCode.
func Curl(ctx context.Context, r CurlRequest) (CurlResult, error) {
	cmd := exec.CommandContext(ctx, "curl", r.Args()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := CurlResult{Status: strings.TrimSpace(stdout.String()), Stderr: strings.TrimSpace(stderr.String())}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
	case err != nil:
		return res, fmt.Errorf("run curl: %w", err)
	}
	return res, nil
}

// ParseDigShort returns the addresses in dig +short output (skipping CNAME
// targets and anything else that is not an address).
func ParseDigShort(out string) []netip.Addr {
	var addrs []netip.Addr
	for _, line := range strings.Fields(out) {
		if a, err := netip.ParseAddr(line); err == nil {
			addrs = append(addrs, a)
		}
	}
	return addrs
}
