package hairpin

import (
	"context"
	"net"
	"sync"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/rewrite"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// rewriteProbeLabel stands for the names a wildcard host answers when its
// host is probed against the rewrite rules: a rule that renames it renames
// at least one name hairpin would answer.
const rewriteProbeLabel = "hairpin-probe"

// rewritten counts, per server block (its listen address and zone, the
// labels of coredns_plugin_enabled), the hairpin hosts that the block's
// rewrite renames before hairpin sees them. CoreDNS runs rewrite before
// hairpin (plugin.cfg), so a leftover rule (ouroboros's, say) silently
// wins over hairpin's answer. The count comes from the rules this replica
// has loaded, which is what kubectl hairpin check reads per replica to
// tell when every reload has taken a removed rule out; the Corefile in the
// ConfigMap says only what the next reload will load. It is computed at
// scrape time, and only for blocks that have a rewrite.
var rewritten = newRewrittenCollector()

func init() { prometheus.MustRegister(rewritten) }

// rewrittenCollector is the collector of rules.MetricHostsRewritten.
type rewrittenCollector struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	// the handler of each block's current instance (a reload starts the
	// new instance before it stops the old one).
	blocks map[blockLabels]*Hairpin
}

func newRewrittenCollector() *rewrittenCollector {
	return &rewrittenCollector{
		desc: prometheus.NewDesc(rules.MetricHostsRewritten,
			"Hairpin hosts that a rewrite rule of the server block, as this replica has loaded it, renames before hairpin sees them (a wildcard host is probed with one name it answers).",
			[]string{"server", "zone"}, nil),
		blocks: map[blockLabels]*Hairpin{},
	}
}

// blockLabels names a server block as CoreDNS's metrics do.
type blockLabels struct{ server, zone string }

// blocksOf returns the labels of cfg's block: one per listen address.
func blocksOf(cfg *dnsserver.Config) []blockLabels {
	var out []blockLabels
	for _, host := range cfg.ListenHosts {
		// As dnsserver groups its servers, and so metrics.WithServer.
		addr := net.JoinHostPort(host, cfg.Port)
		if a, err := net.ResolveTCPAddr("tcp", addr); err == nil {
			addr = a.String()
		}
		out = append(out, blockLabels{server: cfg.Transport + "://" + addr, zone: cfg.Zone})
	}
	return out
}

// add makes h the handler of blocks.
func (c *rewrittenCollector) add(blocks []blockLabels, h *Hairpin) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range blocks {
		c.blocks[b] = h
	}
}

// remove forgets h, but not where a newer instance has taken its block.
func (c *rewrittenCollector) remove(blocks []blockLabels, h *Hairpin) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range blocks {
		if c.blocks[b] == h {
			delete(c.blocks, b)
		}
	}
}

// Describe implements prometheus.Collector.
func (c *rewrittenCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *rewrittenCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	blocks := make(map[blockLabels]*Hairpin, len(c.blocks))
	for b, h := range c.blocks {
		blocks[b] = h
	}
	c.mu.Unlock()
	for b, h := range blocks {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(h.rewrittenHosts()), b.server, b.zone)
	}
}

// rewrittenHosts is the number of hosts of h's index that h.rewrites
// renames; 0 without rules or before the cache is open.
func (h *Hairpin) rewrittenHosts() int {
	hc := h.cache.Load()
	if len(h.rewrites) == 0 || hc == nil || !hc.serving() {
		return 0
	}
	n := 0
	hc.index().each(func(host string, _ *target) {
		if renames(h.rewrites, host) {
			n++
		}
	})
	return n
}

// renames reports whether rules, run as rewrite runs them for an A query
// (in order, up to the first stop rule that applies), rename host. Rules
// that change only the type, class, TTL or EDNS0 options do not rename.
func renames(rules []rewrite.Rule, host string) (renamed bool) {
	name := host
	if len(name) > 2 && name[:2] == "*." {
		name = rewriteProbeLabel + name[1:]
	}
	name = dns.Fqdn(name)
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	state := request.Request{W: probeWriter{}, Req: m}
	// A rule is third-party code run on a made-up query: one that
	// panics on it is no reason to stop serving metrics.
	defer func() {
		if recover() != nil {
			renamed = false
		}
	}()
	for _, r := range rules {
		if _, res := r.Rewrite(context.Background(), state); res == rewrite.RewriteDone && r.Mode() == rewrite.Stop {
			break
		}
	}
	return len(m.Question) == 1 && !equalFold(m.Question[0].Name, name)
}

// equalFold compares two domain names ASCII case-insensitively.
func equalFold(a, b string) bool {
	return len(a) == len(b) && dns.CanonicalName(a) == dns.CanonicalName(b)
}

// rewriteRules returns the rules of the block's rewrite handler, nil
// without one.
func rewriteRules(h plugin.Handler) []rewrite.Rule {
	if rw, ok := h.(rewrite.Rewrite); ok {
		return rw.Rules
	}
	return nil
}

// probeWriter is the response writer of a probe query, which no rule
// writes to: it has loopback addresses for the rules that read them.
type probeWriter struct{ dns.ResponseWriter }

var probeAddr = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}

func (probeWriter) LocalAddr() net.Addr  { return probeAddr }
func (probeWriter) RemoteAddr() net.Addr { return probeAddr }
