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
// The library surface is small: a Config of Routes, New with Options, and
// Server.Start and Server.Shutdown. The command line (flags, environment
// twins, the --route syntax) lives in cmd/hairpin-proxy.
//
// Connections are served by event loops, one per GOMAXPROCS (loop.go):
// each owns the connections it accepts, from accept4 to close, with
// non-blocking system calls on one edge-triggered epoll instance and no
// goroutine per connection. A connection's two directions are flows
// (loop_flow.go).
package proxy
