package proxy

import "syscall"

// The file-descriptor budget of one relayed connection: its two sockets,
// plus, while a direction splices, that direction's pipe (two fds each).
// The relay owns its pipes and closes them when the direction ends, so no
// pipe outlives its connection (Go's own splice pool would keep them until
// a later garbage collection).
const fdsPerConn = 2 + 2*2

// fdReserve is what the process needs besides connections: route and health
// listeners, the epoll and its wake-up fds, stdio, DNS lookups in flight.
const fdReserve = 64

// fallbackMaxConns is the cap when the fd limit cannot be read.
const fallbackMaxConns = 10000

// maxConnsForLimit is the connection cap that fits an fd limit:
// (limit - fdReserve) / fdsPerConn, and at least 1.
func maxConnsForLimit(limit uint64) int {
	if limit <= fdReserve+fdsPerConn {
		return 1
	}
	return int(min((limit-fdReserve)/fdsPerConn, 1<<30))
}

// DefaultMaxConns is the default Config.MaxConns: the number of connections
// whose fd budget fits the process's RLIMIT_NOFILE soft limit (which the Go
// runtime has already raised to the hard limit at startup), so that the cap,
// not EMFILE, is what refuses a connection.
func DefaultMaxConns() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return fallbackMaxConns
	}
	return maxConnsForLimit(lim.Cur)
}
