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
// Once the header is written, a connection's bytes are moved by a copyFunc,
// one call per direction; everything around it (half-close, the idle
// timeout, byte accounting, drain and the connection cap) belongs to the
// relay and the server, so the byte mover can be replaced without touching
// those semantics.
package proxy
