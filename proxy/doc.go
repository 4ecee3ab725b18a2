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
// The relay copies between *net.TCPConn values with io.Copy so that Linux
// can splice(2) the payload in the kernel; idle detection and byte counting
// are built around read deadlines and io.Copy's return values rather than
// wrapper types that would force a user-space copy.
package proxy
