package hairpin

import (
	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Query outcomes, the values of the outcome label.
const (
	outcomeAnswer  = "answer"   // addresses answered
	outcomeNoData  = "nodata"   // NOERROR with an SOA and no answer
	outcomeNoProxy = "no_proxy" // passed on: the target has no ClusterIP
)

// The names are rules' (rules/metrics.go), which kubectl-hairpin reads.
// Every gauge of a cache carries its cache label (a short hash of its
// settings, logged at start), so that several server blocks, and the old and
// new cache of a reload, never overwrite each other; a stopped cache deletes
// its series.
var (
	queriesTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: rules.MetricQueries,
		Help: "Queries for hairpin hosts, by query type and outcome.",
	}, []string{"server", "qtype", "outcome"})

	writeErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: rules.MetricWriteErrors,
		Help: "Responses that could not be written to the client.",
	}, []string{"server"})

	hostsServed = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: rules.MetricHosts,
		Help: "Hosts answered with a target's address, by kind (exact or wildcard).",
	}, []string{"cache", "kind"})

	hostsRejected = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: rules.MetricHostsRejected,
		Help: "Distinct hosts named by selected objects but never answered, by reason (outside_zones, invalid).",
	}, []string{"cache", "reason"})

	targetsKnown = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: rules.MetricTargets,
		Help: "Known targets, by state (serving, no_addresses, disabled, waiting for a ready endpoint).",
	}, []string{"cache", "state"})

	targetAddresses = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: rules.MetricTargetAddresses,
		Help: "Addresses a target is answered with, by family (ipv4, ipv6). Zero for both: its hosts pass through.",
	}, []string{"cache", "target", "family"})

	targetHosts = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: rules.MetricTargetHosts,
		Help: "Hosts answered with a target's address.",
	}, []string{"cache", "target"})

	conflicts = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: rules.MetricConflicts,
		Help: "Conflicts resolved deterministically: objects that several targets select (kind=object), hosts that objects on different targets name (kind=host).",
	}, []string{"cache", "kind"})

	unselectedObjects = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: rules.MetricUnselected,
		Help: "Objects naming hosts that no target selects, by kind; their hosts are not answered.",
	}, []string{"cache", "kind"})

	kindSynced = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: rules.MetricKindSynced,
		Help: "1 once a watched kind's first list is in the index, 0 before (or while it cannot be listed).",
	}, []string{"cache", "kind"})

	watchErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: rules.MetricWatchErrors,
		Help: "List and watch failures, by kind and reason (forbidden, unauthorized, not_found, unavailable, expired, other).",
	}, []string{"cache", "kind", "reason"})

	indexUpdateDelay = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    rules.MetricIndexUpdateDelay,
		Help:    "Delay between a watch event reaching the plugin and the index that reflects it being served.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	})
)

// cacheVecs are the series a cache owns.
var cacheVecs = []*prometheus.MetricVec{
	hostsServed.MetricVec, hostsRejected.MetricVec, targetsKnown.MetricVec, targetAddresses.MetricVec,
	targetHosts.MetricVec, conflicts.MetricVec, unselectedObjects.MetricVec, kindSynced.MetricVec, watchErrors.MetricVec,
}

// reportLocked sets the gauges that follow the published index and the
// claims. The caller holds hc.mu.
func (hc *hostCache) reportLocked(ix *index) {
	exact, wild := ix.size()
	hostsServed.WithLabelValues(hc.id, "exact").Set(float64(exact))
	hostsServed.WithLabelValues(hc.id, "wildcard").Set(float64(wild))
	rejected := hc.claims.rejectedByReason()
	for _, reason := range []string{rules.ReasonOutsideZones, rules.ReasonInvalid} {
		hostsRejected.WithLabelValues(hc.id, reason).Set(float64(rejected[reason]))
	}
	objConfl := 0
	for _, n := range hc.claims.objConfl {
		objConfl += n
	}
	conflicts.WithLabelValues(hc.id, rules.ConflictObject).Set(float64(objConfl))
	conflicts.WithLabelValues(hc.id, rules.ConflictHost).Set(float64(len(hc.claims.hostConfl)))
	for kind, n := range hc.claims.unselected {
		unselectedObjects.WithLabelValues(hc.id, rules.Kind(kind).String()).Set(float64(n))
	}
	states := map[string]int{rules.StateServing: 0, rules.StateNoAddresses: 0, rules.StateDisabled: 0, rules.StateWaiting: 0}
	for _, t := range hc.targets {
		targetHosts.WithLabelValues(hc.id, t.Name).Set(float64(hc.claims.perTarget[t]))
		switch {
		case !t.Enabled():
			states[rules.StateDisabled]++
		case t.Waiting:
			states[rules.StateWaiting]++
		case t.load().empty():
			states[rules.StateNoAddresses]++
		default:
			states[rules.StateServing]++
		}
	}
	for state, n := range states {
		targetsKnown.WithLabelValues(hc.id, state).Set(float64(n))
	}
}

// reportTarget sets a target's address gauges.
func reportTarget(cache string, t *target) {
	if t == nil {
		return
	}
	a := t.load()
	targetAddresses.WithLabelValues(cache, t.Name, "ipv4").Set(float64(len(a.v4)))
	targetAddresses.WithLabelValues(cache, t.Name, "ipv6").Set(float64(len(a.v6)))
}

// deleteTargetMetrics removes the series of a target that is gone.
func deleteTargetMetrics(cache, name string) {
	labels := prometheus.Labels{"cache": cache, "target": name}
	targetAddresses.DeletePartialMatch(labels)
	targetHosts.DeletePartialMatch(labels)
}

// deleteCacheMetrics removes every series of a stopped cache.
func deleteCacheMetrics(cache string) {
	for _, v := range cacheVecs {
		v.DeletePartialMatch(prometheus.Labels{"cache": cache})
	}
}
