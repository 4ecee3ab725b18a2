package routeflag

import (
	"net/netip"
	"strconv"

	"github.com/coredns-hairpin/hairpin/proxy/internal/hostport"
)

// Route is one listen-to-upstream mapping of the proxy (proxy.Route).
type Route struct {
	// Name labels the route in metrics and logs. It defaults to Listen.
	Name string
	// Listen is the local host:port to accept on. The host must be an IP
	// literal or empty (all addresses); port 0 picks a free port.
	Listen string
	// Upstream is the host:port dialled for every accepted connection. A
	// name is re-resolved at most once a second, so a changed Service IP is
	// seen.
	Upstream string
	// HeaderPort is the destination port written in the PROXY header. It
	// defaults to the upstream port: that is the Service port clients dialled
	// (80/443), and nginx derives X-Forwarded-Port and redirects from it, so
	// the container listen port would leak into URLs.
	HeaderPort int
	// DestAddr, when valid, is written as the header's destination address
	// instead of the accepted socket's local address. In a cluster that
	// local address is the proxy pod's IP (kube-proxy has DNATed the
	// ClusterIP the client dialled), so an operator who wants what the load
	// balancer itself would write gives its public IP here. An IPv4 DestAddr
	// is written IPv4-mapped for IPv6 clients; an IPv6 one maps IPv4 clients
	// the same way, since a header has one family.
	DestAddr netip.Addr
}

// String renders r in the --route syntax, which parses back to the same
// route.
func (r Route) String() string {
	s := r.Listen + "=" + r.Upstream
	if _, up := hostport.Split(r.Upstream); r.HeaderPort != 0 && r.HeaderPort != up {
		s += ",header-port=" + strconv.Itoa(r.HeaderPort)
	}
	if r.Name != "" && r.Name != r.Listen {
		s += ",name=" + r.Name
	}
	if r.DestAddr.IsValid() {
		s += ",dest-addr=" + r.DestAddr.String()
	}
	return s
}

// ListenPort is the port of Listen, 0 when it has none.
func (r Route) ListenPort() int {
	_, p := hostport.Split(r.Listen)
	return p
}
