package hairpin

import (
	"sync"
	"sync/atomic"
	"time"
)

// hostCache is the shared state behind one or more hairpin server blocks: the
// watches, the host claims, and the published index that queries read.
type hostCache struct {
	settings settings
	clients  *clients
	target   *proxyTarget

	mu           sync.Mutex // serialises event handlers and publishing
	claims       *claims
	defaultClass string
	pending      []time.Time // arrival times of events not yet published

	idx      atomic.Pointer[index]
	kick     chan struct{} // capacity 1: a publish is due
	synced   atomic.Bool
	syncedCh chan struct{}

	watches watches
	gateway gatewayWatches
	stopCh  chan struct{}
	wg      sync.WaitGroup
}

func newHostCache(c *clients, s settings) *hostCache {
	hc := &hostCache{
		settings: s,
		clients:  c,
		claims:   newClaims(),
		kick:     make(chan struct{}, 1),
		syncedCh: make(chan struct{}),
		stopCh:   make(chan struct{}),
	}
	if len(s.proxyIPs) > 0 {
		hc.target = newStaticTarget(s.proxyIPs)
	} else {
		hc.target = newProxyTarget(s.proxyNamespace + "/" + s.proxyName)
	}
	hc.idx.Store(emptyIndex)
	return hc
}

// index returns the current snapshot; it never returns nil.
func (hc *hostCache) index() *index { return hc.idx.Load() }

// hasSynced reports whether the first full list of every watched kind is in
// the index.
func (hc *hostCache) hasSynced() bool { return hc.synced.Load() }

// waitForSync blocks until the cache has synced or timeout passes.
func (hc *hostCache) waitForSync(timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-hc.syncedCh:
		return true
	case <-t.C:
		return hc.hasSynced()
	}
}

// setClaims records what owner claims now and schedules a publish. The caller
// holds hc.mu.
func (hc *hostCache) setClaimsLocked(owner string, oc ownerClaims, arrived time.Time) {
	for _, r := range hc.claims.set(owner, oc) {
		log.Warningf("not serving host %q named by %s: %s", r.host, owner, rejectionText(r.reason))
	}
	hc.pending = append(hc.pending, arrived)
	hc.schedulePublish()
}

func rejectionText(reason string) string {
	if reason == reasonOutsideZones {
		return "outside the zones this plugin answers for"
	}
	return "not a valid DNS name"
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
		hc.publish()
	}
}

func (hc *hostCache) publish() {
	hc.mu.Lock()
	ix, changed := hc.claims.publish()
	pending := hc.pending
	hc.pending = nil
	rejected := hc.claims.rejectedByReason()
	hc.mu.Unlock()

	if changed {
		hc.idx.Store(ix)
		now := time.Now()
		for _, t := range pending {
			indexUpdateDelay.Observe(now.Sub(t).Seconds())
		}
	}
	exact, wild := ix.size()
	hostsServed.WithLabelValues("exact").Set(float64(exact))
	hostsServed.WithLabelValues("wildcard").Set(float64(wild))
	for _, reason := range []string{reasonOutsideZones, reasonInvalid} {
		hostsRejected.WithLabelValues(reason).Set(float64(rejected[reason]))
	}
}

// markSynced publishes what the first lists delivered, then opens the gate.
func (hc *hostCache) markSynced() {
	hc.publish()
	hc.synced.Store(true)
	close(hc.syncedCh)
	exact, wild := hc.index().size()
	a := hc.target.load()
	log.Infof("synced: serving %d hosts and %d wildcards with proxy %s (%d IPv4, %d IPv6 addresses)", exact, wild, hc.target.name, len(a.v4), len(a.v6))
	if a.empty() {
		log.Warningf("proxy Service %s has no ClusterIP (missing or headless); queries pass through until it has one", hc.target.name)
	}
}
