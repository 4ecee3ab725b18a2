package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// hairpinStanza returns the hairpin stanza of a Corefile, unindented.
func hairpinStanza(corefile string) string {
	i := strings.Index(corefile, "hairpin ")
	if i < 0 {
		return corefile
	}
	const closing = "\n    }"
	end := strings.Index(corefile[i:], closing)
	if end < 0 {
		return corefile[i:]
	}
	return strings.ReplaceAll(corefile[i:i+end+len(closing)], "\n    ", "\n")
}

// brokenHeaderLine returns nginx's last "broken header" complaint, on one
// line: nginx logs the bytes it could not parse as they are, so a TLS
// ClientHello or an HTTP request (with its CR LFs) is escaped and shortened.
func brokenHeaderLine(errorLog string) string {
	i := strings.LastIndex(errorLog, "broken header")
	if i < 0 {
		return "(no broken header in the error log)"
	}
	start := strings.LastIndex(errorLog[:i], "\n") + 1
	const tailMarker = "\" while reading PROXY protocol"
	end := strings.Index(errorLog[i:], tailMarker)
	if end < 0 {
		return printable(errorLog[start:], 200)
	}
	end += i
	lineEnd := strings.Index(errorLog[end:], "\n")
	if lineEnd < 0 {
		lineEnd = len(errorLog) - end
	}
	const open = "broken header: \""
	head := errorLog[start : i+len(open)]
	raw := errorLog[i+len(open) : end]
	return head + printable(raw, 16) + errorLog[end:end+lineEnd]
}

// printable shows the first max bytes of s with printable ASCII as is and
// every other byte as \xNN.
func printable(s string, max int) string {
	var b strings.Builder
	for i := 0; i < len(s) && i < max; i++ {
		switch c := s[i]; {
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\n':
			b.WriteString(`\n`)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	if len(s) > max {
		b.WriteString("...")
	}
	return b.String()
}

// accessLogLine returns the access log line that names client.
func accessLogLine(path, client string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("access log: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"remote_addr":"`+client+`"`) {
			return sc.Text(), nil
		}
	}
	return "", fmt.Errorf("access log %s has no line for %s", path, client)
}

// waitServed polls the DNS server for app.example.com until it answers want
// and returns when that happened.
func waitServed(ctx context.Context, server string, want netip.Addr) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := harness.PollEvery(ctx, 2*time.Millisecond, harness.AProbe(server, host, want)); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

func splitHostPort(hostport string) (string, string) {
	h, p, _ := net.SplitHostPort(hostport)
	return h, p
}

// shellJoin quotes args for a POSIX shell where needed.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~%") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
