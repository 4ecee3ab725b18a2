// Package rawsock holds the socket system calls of the proxy's event loops,
// on bare non-blocking descriptors rather than net.Conn: I/O, addresses,
// connect and accept, listeners, and the way out of the runtime poller.
//
// Every call here retries EINTR itself, so no caller needs a loop for it;
// EAGAIN is returned as unix.EAGAIN for the caller's event loop to wait on.
package rawsock
