package proxy

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
)

// dialFunc dials an upstream. The Server's is net.Dialer.DialContext, which
// resolves the host again on every call (the event loops cache its result
// for a second, upstream_name.go); that is what lets a changed Service
// IP take effect without a restart. Tests replace it (withDialFunc).
type dialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// classifyDialError maps a dial error to a metric cause. DNS comes first
// because a resolver timeout is a DNS problem, not a slow upstream.
func classifyDialError(err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return dialErrDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return dialErrRefused
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), isTimeout(err):
		return dialErrTimeout
	default:
		return dialErrOther
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// osKeepAlive turns TCP keepalive on with the kernel's own timers: one
// setsockopt per socket instead of Go's default four (on, idle, interval,
// count), which is measurable at thousands of new connections a second.
var osKeepAlive = net.KeepAliveConfig{Enable: true, Idle: -1, Interval: -1, Count: -1}
