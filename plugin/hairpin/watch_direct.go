package hairpin

import (
	"strings"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// directWatch is the Service watch of one namespace that holds the Service
// of a direct target: direct targets answer with that Service's ClusterIPs,
// not their own. It runs while some direct target names a Service there.
type directWatch struct {
	inf     cache.SharedIndexInformer
	kind    *kindWatch
	stop    chan struct{} // closed when no direct target names the namespace
	factory informers.SharedInformerFactory
}

// directKind is the kind label of the Service watch of namespace ns.
func directKind(ns string) string { return "services/" + ns }

// directLocked gives direct target t the addresses of the Service it names,
// watching that Service's namespace first if no other target does. A
// Service that is not there (yet) leaves t without addresses: its hosts
// pass through.
func (hc *hostCache) directLocked(t *target) {
	ns, _, _ := strings.Cut(t.Spec.Direct, "/")
	w := hc.directWatchLocked(ns)
	if w == nil {
		return
	}
	hc.storeDirectLocked(t, w)
}

// storeDirectLocked stores what w's cache holds of t's Service, and says
// once when the watch has listed and the Service is missing or headless.
func (hc *hostCache) storeDirectLocked(t *target, w *directWatch) {
	addrs := noAddrs
	if obj, ok, _ := w.inf.GetIndexer().GetByKey(t.Spec.Direct); ok {
		if svc, ok := obj.(*cachedService); ok {
			addrs = svc.addrs
		}
	}
	changed := t.store(addrs)
	reportTarget(hc.id, t)
	missing := addrs.empty() && w.kind.synced.Load()
	switch {
	case missing && !hc.directMissing[t.Name]:
		hc.directMissing[t.Name] = true
		log.Warningf("target %s: its direct Service %s is missing or headless; queries for its hosts pass through", t.Name, t.Spec.Direct)
	case !addrs.empty() && (changed || hc.directMissing[t.Name]):
		delete(hc.directMissing, t.Name)
		log.Infof("target %s: answering with %v %v, the ClusterIPs of its direct Service %s", t.Name, addrs.v4, addrs.v6, t.Spec.Direct)
	}
}

// directWatchLocked returns the Service watch of namespace ns, starting it
// when none runs. It never gates readiness: a namespace the plugin may not
// read (no Role there) degrades only the direct targets naming it.
func (hc *hostCache) directWatchLocked(ns string) *directWatch {
	if w, ok := hc.direct[ns]; ok {
		return w
	}
	if hc.clients == nil || hc.clients.kube == nil {
		return nil
	}
	w := &directWatch{stop: make(chan struct{})}
	w.factory = informers.NewSharedInformerFactoryWithOptions(hc.clients.kube, 0, informers.WithNamespace(ns), informers.WithTransform(slimService))
	w.inf = w.factory.Core().V1().Services().Informer()
	w.kind = hc.addKind(directKind(ns), false)
	onChange := func(obj any, _ time.Time) {
		if svc, ok := obj.(*cachedService); ok {
			hc.directChangedLocked(svc.key())
		}
	}
	if err := hc.handle(w.kind, w.inf, onChange, onChange); err != nil {
		log.Errorf("target Services in %s: %v", ns, err)
		return nil
	}
	hc.direct[ns] = w
	// Stops with the cache, or when no direct target needs it any more.
	done := make(chan struct{})
	go func() {
		select {
		case <-hc.stopCh:
		case <-w.stop:
		}
		close(done)
	}()
	w.factory.Start(done)
	hc.wg.Add(1)
	go func() {
		defer hc.wg.Done()
		if !cache.WaitForCacheSync(done, w.inf.HasSynced) {
			return
		}
		w.kind.markSynced()
		hc.mu.Lock()
		defer hc.mu.Unlock()
		for _, t := range hc.targets {
			if strings.HasPrefix(t.Spec.Direct, ns+"/") {
				hc.storeDirectLocked(t, w)
			}
		}
	}()
	log.Infof("watching the Services of %s for direct targets", ns)
	return w
}

// directChangedLocked updates every direct target that names Service key.
func (hc *hostCache) directChangedLocked(key string) {
	for _, t := range hc.targets {
		if t.Spec.Direct == key {
			ns, _, _ := strings.Cut(key, "/")
			hc.storeDirectLocked(t, hc.direct[ns])
		}
	}
}

// pruneDirectLocked stops the Service watches of namespaces that no direct
// target names any more.
func (hc *hostCache) pruneDirectLocked() {
	used := map[string]bool{}
	for _, t := range hc.targets {
		if ns, _, ok := strings.Cut(t.Spec.Direct, "/"); ok {
			used[ns] = true
		}
	}
	for ns, w := range hc.direct {
		if used[ns] {
			continue
		}
		close(w.stop)
		delete(hc.direct, ns)
		hc.removeKindLocked(w.kind)
		go w.factory.Shutdown() // not under hc.mu: its handlers take it
		log.Infof("no direct target names a Service in %s; its watch stops", ns)
	}
}
