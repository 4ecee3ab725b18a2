// Package hairpin answers the cluster's own Ingress and Gateway API hostnames
// with the ClusterIP of the PROXY-protocol proxy target that fronts each
// host's controller, so that in-cluster clients reach the controller through
// the proxy instead of short-circuiting the load balancer that would have
// added the PROXY header.
//
// The package does two jobs; what it decides from the objects (targets,
// selection, zones, hostnames) is package rules.
//
// The DNS handler, in CoreDNS's file conventions: setup.go (the Corefile
// stanza and the plugin's lifecycle), hairpin.go (ServeDNS), ready.go,
// metrics.go, log.go, client.go (the API clients) and leases.go (one cache
// shared by server blocks with equal settings, and kept across a reload).
//
// The watch and cache engine, which the handler reads through one atomic
// pointer: cache.go (a cache's lifecycle and publishing), watch.go,
// store_watch.go, watch_ingress.go, watch_target.go, watch_gateway.go and
// route_kinds.go (the informers and their handlers), watch_health.go (each
// watched kind's sync and failures), ingress.go, gateway_slim.go, object.go
// and intern.go (the slim objects the informers keep), target.go (the
// targets and their addresses), claims.go (which owner serves which host)
// and index.go and table.go (the immutable index queries read).
package hairpin

import (
	"context"
	"net"
	"strings"
	"sync/atomic"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/dnsutil"
	"github.com/coredns/coredns/plugin/rewrite"
	"github.com/coredns/coredns/request"

	"github.com/miekg/dns"
)

// Hairpin is the plugin handler of one server block.
type Hairpin struct {
	Next  plugin.Handler
	Zones []string

	ttl      uint32
	rewrites []rewrite.Rule            // the block's, which run first; set in OnStartup
	cache    atomic.Pointer[hostCache] // set in OnStartup; nil before
	inert    atomic.Bool               // no API client: pass-through and Ready
}

// Name implements plugin.Handler.
func (h *Hairpin) Name() string { return pluginName }

// ServeDNS implements plugin.Handler. It answers A, AAAA, HTTPS and SVCB for
// hairpin hosts and hands everything else to the next plugin unchanged.
func (h *Hairpin) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	state := request.Request{W: w, Req: r}
	qtype := state.QType()
	switch qtype {
	case dns.TypeA, dns.TypeAAAA, dns.TypeHTTPS, dns.TypeSVCB:
	default:
		return plugin.NextOrFailure(h.Name(), h.Next, ctx, w, r)
	}
	hc := h.cache.Load()
	if hc == nil || !hc.serving() {
		return plugin.NextOrFailure(h.Name(), h.Next, ctx, w, r)
	}
	// The index holds only hosts inside the zones, so a hit is in a zone;
	// the zone itself is only needed for the SOA of a NODATA answer.
	qname := strings.ToLower(state.QName())
	target := hc.index().lookup(qname)
	if target == nil {
		return plugin.NextOrFailure(h.Name(), h.Next, ctx, w, r)
	}
	addrs := target.load()
	if addrs.empty() {
		queriesTotal.WithLabelValues(metrics.WithServer(ctx), dns.TypeToString[qtype], outcomeNoProxy).Inc()
		return plugin.NextOrFailure(h.Name(), h.Next, ctx, w, r)
	}

	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	switch qtype {
	case dns.TypeA:
		m.Answer = h.addressRecords(state.QName(), dns.TypeA, addrs.v4)
	case dns.TypeAAAA:
		m.Answer = h.addressRecords(state.QName(), dns.TypeAAAA, addrs.v6)
	}
	outcome := outcomeAnswer
	if len(m.Answer) == 0 {
		// NODATA, never the upstream's answer: a public AAAA or an HTTPS
		// record's address hints would send the client around the proxy.
		m.Ns = []dns.RR{h.soa(rules.MatchZone(h.Zones, qname))}
		outcome = outcomeNoData
	}
	server := metrics.WithServer(ctx)
	queriesTotal.WithLabelValues(server, dns.TypeToString[qtype], outcome).Inc()
	if err := w.WriteMsg(m); err != nil {
		// The client gets nothing; say why, once per distinct failure.
		writeErrors.WithLabelValues(server).Inc()
		logWriteError(qname, err)
		return dns.RcodeServerFailure, err
	}
	return dns.RcodeSuccess, nil
}

var writeErrorLog = newOnceLog()

func logWriteError(qname string, err error) {
	writeErrorLog.do(err.Error(), func() { log.Errorf("writing the answer for %s: %v", qname, err) })
}

// addressRecords builds A or AAAA records owned by the name as the client
// spelled it, so that the answer keeps the query's letter case.
func (h *Hairpin) addressRecords(owner string, rrtype uint16, ips []net.IP) []dns.RR {
	if len(ips) == 0 {
		return nil
	}
	hdr := dns.RR_Header{Name: owner, Rrtype: rrtype, Class: dns.ClassINET, Ttl: h.ttl}
	rrs := make([]dns.RR, len(ips))
	for i, ip := range ips {
		if rrtype == dns.TypeA {
			rrs[i] = &dns.A{Hdr: hdr, A: ip}
		} else {
			rrs[i] = &dns.AAAA{Hdr: hdr, AAAA: ip}
		}
	}
	return rrs
}

// soa is the authority record of a NODATA answer. Its minimum is the answer
// TTL, so negative caching lasts no longer than a positive answer would.
func (h *Hairpin) soa(zone string) dns.RR {
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: h.ttl},
		Ns:      dnsutil.Join("ns.dns", zone),
		Mbox:    dnsutil.Join("hostmaster.dns", zone),
		Serial:  1,
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  h.ttl,
	}
}
