package proxy

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Label values of hairpin_proxy_connections_refused_total{reason}.
const (
	refusedCap      = "cap"      // over --max-conns
	refusedHeader   = "header"   // no valid TCP PROXY header could be built
	refusedDial     = "dial"     // the upstream dial failed
	refusedShutdown = "shutdown" // accepted after the listeners began closing
)

// Label values of hairpin_proxy_connections_closed_total{reason}.
const (
	closedEOF   = "eof"   // both directions finished with EOF
	closedError = "error" // a read or write failed, e.g. a reset
	closedIdle  = "idle"  // --idle-timeout fired
	closedDrain = "drain" // still open when --drain-timeout expired
)

// Label values of hairpin_proxy_upstream_dial_errors_total{cause}.
const (
	dialErrTimeout = "timeout" // no answer within --dial-timeout
	dialErrRefused = "refused" // connection refused (nothing listening)
	dialErrDNS     = "dns"     // the upstream name did not resolve
	dialErrOther   = "other"   // anything else, e.g. no route to host
)

const (
	dirToUp      = "client_to_upstream"
	dirToClient  = "upstream_to_client"
	metricPrefix = "hairpin_proxy_"
)

// metrics holds every series on a private registry, so the proxy library
// never pollutes (or collides in) the global default registry.
type metrics struct {
	reg          *prometheus.Registry
	accepted     *prometheus.CounterVec
	refused      *prometheus.CounterVec
	active       *prometheus.GaugeVec
	closed       *prometheus.CounterVec
	bytes        *prometheus.CounterVec
	dialErrors   *prometheus.CounterVec
	dialDuration *prometheus.HistogramVec
	connDuration *prometheus.HistogramVec
	upstreamUp   *prometheus.GaugeVec
	ready        prometheus.Gauge
}

func newMetrics(version string) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "connections_accepted_total",
			Help: "Client connections accepted, per route.",
		}, []string{"route"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "connections_refused_total",
			Help: "Client connections closed without being relayed, per route and reason (cap, header, dial, shutdown).",
		}, []string{"route", "reason"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metricPrefix + "connections_active",
			Help: "Client connections currently open (dialling or relaying), per route.",
		}, []string{"route"}),
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "connections_closed_total",
			Help: "Relayed connections that ended, per route and reason (eof, error, idle, drain).",
		}, []string{"route", "reason"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "bytes_total",
			Help: "Payload bytes relayed, per route and direction (client_to_upstream, upstream_to_client); excludes the PROXY header. Long transfers are added at least every few seconds, not only at close.",
		}, []string{"route", "direction"}),
		dialErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "upstream_dial_errors_total",
			Help: "Failed upstream dials for client connections, per route and cause (timeout, refused, dns, other).",
		}, []string{"route", "cause"}),
		dialDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricPrefix + "upstream_dial_duration_seconds",
			Help:    "Time to dial the upstream (DNS included) for client connections, successful or not, per route.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
		connDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricPrefix + "connection_duration_seconds",
			Help:    "Lifetime of relayed connections from accept to close, per route.",
			Buckets: []float64{.001, .01, .1, .5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600},
		}, []string{"route"}),
		upstreamUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: metricPrefix + "upstream_up",
			Help: "1 if the last background TCP check of the route's upstream succeeded, else 0.",
		}, []string{"route"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricPrefix + "ready",
			Help: "1 while /readyz reports ready.",
		}),
	}
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        metricPrefix + "build_info",
		Help:        "Always 1; the version label identifies the build.",
		ConstLabels: prometheus.Labels{"version": version},
	})
	info.Set(1)
	m.reg.MustRegister(m.accepted, m.refused, m.active, m.closed, m.bytes,
		m.dialErrors, m.dialDuration, m.connDuration, m.upstreamUp, m.ready, info,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// routeMetrics caches the children of one route so the per-connection path
// never looks labels up.
type routeMetrics struct {
	accepted     prometheus.Counter
	active       prometheus.Gauge
	bytesToUp    prometheus.Counter
	bytesToCli   prometheus.Counter
	dialDuration prometheus.Observer
	connDuration prometheus.Observer
	up           prometheus.Gauge
	// The per-reason children, looked up once: a label lookup hashes its
	// values on every call, and close runs for every connection.
	refused    map[string]prometheus.Counter
	closed     map[string]prometheus.Counter
	dialErrors map[string]prometheus.Counter
}

func (m *metrics) forRoute(name string) *routeMetrics {
	rm := &routeMetrics{
		accepted:     m.accepted.WithLabelValues(name),
		active:       m.active.WithLabelValues(name),
		bytesToUp:    m.bytes.WithLabelValues(name, dirToUp),
		bytesToCli:   m.bytes.WithLabelValues(name, dirToClient),
		dialDuration: m.dialDuration.WithLabelValues(name),
		connDuration: m.connDuration.WithLabelValues(name),
		up:           m.upstreamUp.WithLabelValues(name),
		refused:      map[string]prometheus.Counter{},
		closed:       map[string]prometheus.Counter{},
		dialErrors:   map[string]prometheus.Counter{},
	}
	// Created up front, so the label sets dashboards alert on read 0 rather
	// than being absent before the first event.
	for _, r := range []string{refusedCap, refusedHeader, refusedDial, refusedShutdown} {
		rm.refused[r] = m.refused.WithLabelValues(name, r)
	}
	for _, c := range []string{dialErrTimeout, dialErrRefused, dialErrDNS, dialErrOther} {
		rm.dialErrors[c] = m.dialErrors.WithLabelValues(name, c)
	}
	for _, r := range []string{closedEOF, closedError, closedIdle, closedDrain} {
		rm.closed[r] = m.closed.WithLabelValues(name, r)
	}
	return rm
}

func (rm *routeMetrics) refuse(reason string)   { rm.refused[reason].Inc() }
func (rm *routeMetrics) close(reason string)    { rm.closed[reason].Inc() }
func (rm *routeMetrics) dialError(cause string) { rm.dialErrors[cause].Inc() }
