package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

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

// portOf returns the port of "ip:port", 0 if there is none.
func portOf(hostport string) int {
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

// waitEnter waits for a line on stdin or for ctx to end, and reports
// whether a line came. Without a terminal (stdin at EOF) it waits for ctx.
func waitEnter(ctx context.Context) bool {
	line := make(chan bool, 1)
	go func() {
		_, err := bufio.NewReader(os.Stdin).ReadString('\n')
		line <- err == nil
	}()
	select {
	case ok := <-line:
		if ok {
			return true
		}
		<-ctx.Done()
		return false
	case <-ctx.Done():
		return false
	}
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
