// Package proxy is hairpin-proxy: a TCP forwarder that prepends a
// PROXY-protocol header carrying the real client address and then relays
// bytes both ways, untouched, to an upstream such as the ingress-nginx
// Service.
//
// It exists because in-cluster clients that reach the cluster's own public
// hostnames are short-circuited past the external load balancer, so their
// connections reach an ingress that requires a PROXY header without one. The
// hairpin CoreDNS plugin points those names at this proxy instead.
//
// The library surface is what cmd/hairpin-proxy needs and no more: a Config
// of Routes, New with Options, and Server.Start, Addr, HealthAddr and
// Shutdown. The command line (flags, environment twins, the --route syntax)
// lives in the command; what only tests set is in export_test.go.
//
// Connections are served by event loops, one per GOMAXPROCS (loop.go), on
// the engine in internal/evloop: each owns the connections it accepts
// (listener.go), from accept4 to close, with non-blocking system calls
// (internal/rawsock) on one edge-triggered epoll instance and no goroutine
// per connection. A connection (conn.go, conn_dial.go) dials its upstream
// and writes the header; its relay (relay.go) moves the bytes of its two
// directions (direction.go), each a flow with a buffer or a splice pipe (flow.go).
package proxy
