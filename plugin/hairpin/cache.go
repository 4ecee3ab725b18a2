package hairpin

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	"k8s.io/client-go/tools/cache"
)

// hostCache is the shared state behind one or more hairpin server blocks: the
// watches, the targets, the host claims, and the published index that queries
// read. Its lifecycle is new, start, then stop.
type hostCache struct {
	settings settings
	clients  *clients
	id       string // the cache label of its metrics

	mu           sync.Mutex // serialises event handlers and publishing
	claims       *claims
	ingresses    *ingressStore
	named        map[ownerRef]*owner  // the owners of the Gateway API kinds that claim anything
	targets      targets              // every known target, explicit or discovered
	byClass      map[string]selection // the target of each Ingress class, until the targets change
	defaultClass string
	pending      []time.Time // arrival times of events not yet published
	reselect     bool        // targets changed: every object's claims are recomputed

	idx    atomic.Pointer[index]
	kick   chan struct{} // capacity 1: a publish is due
	open   atomic.Bool   // serving: synced, or startup_timeout passed
	openCh chan struct{}

	kinds   []*kindWatch // the kinds watched, for readiness and metrics
	watches watches
	gateway gatewayWatches
	// The Service watches of the namespaces that direct targets name, and
	// the direct targets whose Service was found missing (logged once).
	direct        map[string]*directWatch
	directMissing map[string]bool
	// The EndpointSlices of discovered targets, which a new target waits
	// for (watch_endpoints.go); nil with proxy and proxy_ip.
	slices    cache.SharedIndexInformer
	sliceKind *kindWatch
	stopCh    chan struct{}
	wg        sync.WaitGroup
}

func newHostCache(c *clients, s settings) *hostCache {
	sum := sha256.Sum256([]byte(s.cacheKey()))
	hc := &hostCache{
		settings: s,
		clients:  c,
		id:       hex.EncodeToString(sum[:4]),
		claims:   newClaims(),
		named:    map[ownerRef]*owner{},
		targets:  targets{},
		byClass:  map[string]selection{},

		direct:        map[string]*directWatch{},
		directMissing: map[string]bool{},
		kick:          make(chan struct{}, 1),
		openCh:        make(chan struct{}),
		stopCh:        make(chan struct{}),
	}
	if t := explicitTarget(s); t != nil {
		hc.targets[t.Name] = t
	}
	hc.ingresses = newIngressStore(hc)
	hc.idx.Store(emptyIndex)
	return hc
}

// start begins watching and returns at once; it makes no network call. The
// gate opens the cache when every required kind has synced, or at
// startup_timeout.
func (hc *hostCache) start() error {
	hc.clients.reportRetries(hc.onRetry)
	if err := hc.watchIngresses(); err != nil {
		return err
	}
	if err := hc.watchTargets(); err != nil {
		return err
	}
	// The kinds so far; the Gateway API kinds and the Services of direct
	// targets, which handlers add once the informers run, wait for their
	// own sync.
	kinds := slices.Clone(hc.kinds)
	for _, f := range hc.watches.factories {
		f.Start(hc.stopCh)
	}
	hc.runControllers()
	hc.mu.Lock()
	hc.ensureGatewayWatchesLocked()
	hc.mu.Unlock()
	hc.wg.Add(3 + len(kinds))
	go func() {
		defer hc.wg.Done()
		hc.clients.watchAPIServer(hc.stopCh)
	}()
	for _, k := range kinds {
		go k.waitSynced()
	}
	go hc.publishLoop()
	go hc.gate()
	return nil
}

// explicitTarget is the one target of `proxy` or `proxy_ip`, or nil when
// targets are discovered. It selects what ingress_class and gateway_class
// name (every Ingress class when ingress_class is not given), inside the
// stanza's zones.
func explicitTarget(s settings) *target {
	if !s.explicit() {
		return nil
	}
	spec := rules.TargetSpec{Zones: s.zones, IngressClasses: s.ingressClasses, GatewayClasses: s.gatewayClasses}
	if len(spec.IngressClasses) == 0 {
		spec.IngressClasses = []string{"*"}
	}
	if len(s.proxyIPs) > 0 {
		return newStaticTarget(s.proxyIPs, spec)
	}
	return newTarget(rules.Target{Name: s.proxyNamespace + "/" + s.proxyName, Spec: spec})
}

// index returns the current snapshot; it never returns nil.
func (hc *hostCache) index() *index { return hc.idx.Load() }

// serving reports whether queries are answered from the index: once every
// required kind has synced, or once startup_timeout has passed, whichever
// comes first.
func (hc *hostCache) serving() bool { return hc.open.Load() }

// waitOpen blocks until the cache serves or timeout passes.
func (hc *hostCache) waitOpen(timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-hc.openCh:
		return true
	case <-t.C:
		return hc.serving()
	case <-hc.stopCh:
		return false
	}
}

// gate opens the cache when every required kind has synced or the startup
// timeout passes. A kind that cannot be listed (forbidden, CRD missing,
// apiserver down) degrades only the hosts it would contribute.
func (hc *hostCache) gate() {
	defer hc.wg.Done()
	deadline := time.NewTimer(hc.settings.startupTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if hc.requiredSynced() {
			hc.openUp(nil)
			return
		}
		select {
		case <-hc.stopCh:
			return
		case <-deadline.C:
			hc.openUp(hc.unsyncedKinds())
			hc.afterLateSync(tick.C)
			return
		case <-tick.C:
		}
	}
}

// afterLateSync waits, once the cache opened at startup_timeout, for the
// required kinds to finish their first lists, and then returns their peak to
// the OS as openUp does for a timely sync.
func (hc *hostCache) afterLateSync(tick <-chan time.Time) {
	for !hc.requiredSynced() {
		select {
		case <-hc.stopCh:
			return
		case <-tick:
		}
	}
	hc.publish()
	debug.FreeOSMemory()
}

// openUp publishes what the lists delivered so far and starts serving.
func (hc *hostCache) openUp(unsynced []string) {
	hc.mu.Lock()
	hc.endEveryWaitLocked()
	hc.publishLocked()
	hc.open.Store(true)
	close(hc.openCh)
	targets := len(hc.targets)
	hc.mu.Unlock()
	// The first lists are the peak of the cache's life; hand what they
	// needed transiently back to the OS rather than carry it as RSS.
	debug.FreeOSMemory()
	exact, wild := hc.index().size()
	if len(unsynced) > 0 {
		log.Warningf("serving after startup_timeout %s without a full list of %v: their hosts are missing until they sync (see coredns_hairpin_kind_synced)", hc.settings.startupTimeout, unsynced)
	}
	log.Infof("cache %s: serving %d hosts and %d wildcards for %d targets", hc.id, exact, wild, targets)
}

// setClaimsLocked records what o claims now and schedules a publish. The
// caller holds hc.mu.
func (hc *hostCache) setClaimsLocked(o *owner, oc ownerClaims, arrived time.Time) {
	for _, r := range hc.claims.set(o, oc) {
		log.Warningf("not serving host %q named by %s: %s", r.Host, o, rules.RejectionText(r.Reason))
	}
	hc.pending = append(hc.pending, arrived)
	hc.schedulePublish()
}

// setNamedClaimsLocked is setClaimsLocked for an owner known by its ref (a
// Gateway, a route through one Gateway), kept in hc.named while it claims
// anything.
func (hc *hostCache) setNamedClaimsLocked(ref ownerRef, oc ownerClaims, arrived time.Time) {
	o, ok := hc.named[ref]
	if !ok {
		o = &owner{ownerRef: ref}
		hc.named[ref] = o
	}
	hc.setClaimsLocked(o, oc, arrived)
	if o.claims.isEmpty() {
		delete(hc.named, ref)
	}
}

// targetsChangedLocked schedules a full recomputation: which target selects
// which object may have changed for any object. The caller holds hc.mu.
func (hc *hostCache) targetsChangedLocked() {
	clear(hc.byClass)
	hc.reselect = true
	hc.pending = append(hc.pending, time.Now())
	hc.schedulePublish()
}

func (hc *hostCache) schedulePublish() {
	select {
	case hc.kick <- struct{}{}:
	default:
	}
}

// publishLoop swaps in a new index whenever claims changed. Bursts of events,
// such as the initial list, coalesce into one publish.
func (hc *hostCache) publishLoop() {
	defer hc.wg.Done()
	for {
		select {
		case <-hc.stopCh:
			return
		case <-hc.kick:
		}
		// Before the cache opens nothing reads the index: the first lists
		// (and the targets they bring) are published once, by openUp.
		if !hc.open.Load() {
			continue
		}
		hc.mu.Lock()
		copies := hc.publishLocked()
		hc.mu.Unlock()
		// A burst (the rest of a first list after startup_timeout, a
		// relist, a target that changes the claims of every object)
		// touches every table: coalesce it, at a pause as long as the
		// copy was large, instead of copying the whole index per batch.
		if copies > burstCopies {
			select {
			case <-hc.stopCh:
				return
			case <-time.After(burstPause * time.Duration(copies) / shardCount):
			}
		}
	}
}

// A publish that copied more than burstCopies tables is a burst; the next
// one waits in proportion to the share of tables copied, up to burstPause
// for the whole index (as before the index had directories: 1 ms for each
// of its 256 tables then).
const (
	burstCopies = shardCount / 8
	burstPause  = 256 * time.Millisecond
)

// publishLocked builds and stores the new index in one step under hc.mu, so
// that two publishes can never store out of order. It returns how many
// tables the new index copied.
func (hc *hostCache) publishLocked() int {
	if hc.reselect {
		hc.reselect = false
		hc.recomputeAllLocked(time.Now())
		hc.ensureGatewayWatchesLocked()
	}
	ix, changed, copies := hc.claims.publish()
	pending := hc.pending
	hc.pending = nil
	if changed {
		hc.idx.Store(ix)
		now := time.Now()
		for _, t := range pending {
			indexUpdateDelay.Observe(now.Sub(t).Seconds())
		}
	}
	hc.reportLocked(ix)
	return copies
}

// stop ends every watch and waits for the goroutines to exit, so a reload
// leaks neither, then removes the cache's metric series.
func (hc *hostCache) stop() {
	close(hc.stopCh)
	hc.wg.Wait() // the discovery loop may still add informers until it exits
	for _, f := range hc.watches.factories {
		f.Shutdown()
	}
	hc.mu.Lock()
	factories := hc.gateway.factories
	var direct []*directWatch
	for _, w := range hc.direct {
		direct = append(direct, w)
	}
	hc.mu.Unlock()
	for _, f := range factories {
		f.Shutdown()
	}
	for _, w := range direct {
		w.factory.Shutdown()
	}
	deleteCacheMetrics(hc.id)
}

// publish builds and stores the index now, under hc.mu.
func (hc *hostCache) publish() {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	hc.publishLocked()
}
