package rules

// The names of the plugin's metrics, defined here once: the plugin
// registers them (plugin/hairpin/metrics.go) and kubectl-hairpin reads them
// from CoreDNS's /metrics.
const (
	// MetricPrefix begins every metric of the plugin.
	MetricPrefix = "coredns_hairpin_"

	MetricQueries          = MetricPrefix + "queries_total"              // by server, qtype, outcome
	MetricWriteErrors      = MetricPrefix + "write_errors_total"         // by server
	MetricHosts            = MetricPrefix + "hosts"                      // by cache, kind (exact, wildcard)
	MetricHostsRejected    = MetricPrefix + "hosts_rejected"             // by cache, reason
	MetricTargets          = MetricPrefix + "targets"                    // by cache, state
	MetricTargetAddresses  = MetricPrefix + "target_addresses"           // by cache, target, family
	MetricTargetHosts      = MetricPrefix + "target_hosts"               // by cache, target
	MetricConflicts        = MetricPrefix + "conflicts"                  // by cache, kind (object, host)
	MetricUnselected       = MetricPrefix + "unselected_objects"         // by cache, kind (Kind.String)
	MetricKindSynced       = MetricPrefix + "kind_synced"                // by cache, kind (watched kind)
	MetricWatchErrors      = MetricPrefix + "watch_errors_total"         // by cache, kind, reason
	MetricIndexUpdateDelay = MetricPrefix + "index_update_delay_seconds" // histogram
	MetricHostsRewritten   = MetricPrefix + "hosts_rewritten"            // by server
)

// Reasons a named host is not served: the values of the reason label of
// MetricHostsRejected, and Rejected.Reason.
const (
	ReasonOutsideZones = "outside_zones"
	ReasonInvalid      = "invalid"
)

// Target states, the values of the state label of MetricTargets.
const (
	StateServing     = "serving"
	StateNoAddresses = "no_addresses"
	StateDisabled    = "disabled"
	StateWaiting     = "waiting" // for a ready endpoint (Target.Waiting)
)

// Conflict kinds, the values of the kind label of MetricConflicts.
const (
	ConflictObject = "object" // an object that several targets select
	ConflictHost   = "host"   // a host that objects on different targets name
)
