package hairpin

import (
	"github.com/coredns/coredns/plugin"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Query outcomes, the values of the outcome label.
const (
	outcomeAnswer  = "answer"   // addresses answered
	outcomeNoData  = "nodata"   // NOERROR with an SOA and no answer
	outcomeNoProxy = "no_proxy" // passed on: the proxy Service has no ClusterIP
)

var (
	queriesTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "queries_total",
		Help:      "Queries for hairpin hosts, by query type and outcome.",
	}, []string{"server", "qtype", "outcome"})

	hostsServed = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "hosts",
		Help:      "Hosts answered with the proxy address, by kind (exact or wildcard).",
	}, []string{"kind"})

	hostsRejected = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "hosts_rejected",
		Help:      "Distinct hosts named by watched objects but never answered, by reason (outside_zones, invalid).",
	}, []string{"reason"})

	proxyAddresses = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "proxy_addresses",
		Help:      "Proxy addresses answered, by family (ipv4, ipv6). Zero means queries pass through.",
	}, []string{"family"})

	indexUpdateDelay = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "index_update_delay_seconds",
		Help:      "Delay between a watch event reaching the plugin and the index that reflects it being served.",
		Buckets:   []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	})
)

func reportProxyAddresses(a *proxyAddrs) {
	proxyAddresses.WithLabelValues("ipv4").Set(float64(len(a.v4)))
	proxyAddresses.WithLabelValues("ipv6").Set(float64(len(a.v6)))
}
