package hairpin

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	networking "k8s.io/api/networking/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// watchIngresses registers the Ingress watches (one per watched namespace,
// all into one ingressStore) and, when a target may filter by class, the
// IngressClass informer that tells the default class.
func (hc *hostCache) watchIngresses() error {
	s := hc.settings
	k := hc.addKind("ingress", true)
	transform := newIngressEntry(hc.selected, newInterner(1024))
	for _, ns := range hc.watchedNamespaces() {
		lw := ingressListWatch(hc.clients.kube, ns, hc.labelTweak())
		hc.watchInto(k, lw, &networking.Ingress{}, transform, ingressKey, ingressView{s: hc.ingresses, ns: ns})
	}

	// Discovered targets may select any class at any time; an explicit
	// proxy only needs the default class when it filters.
	if s.explicit() && !filtersClasses(s.ingressClasses) {
		return nil
	}
	f := hc.newFactory("", newCachedIngressClass, nil)
	inf := f.Networking().V1().IngressClasses().Informer()
	onClass := func(any, time.Time) { hc.onIngressClassLocked() }
	if err := hc.handle(hc.addKind("ingressclass", true), inf, onClass, onClass); err != nil {
		return err
	}
	hc.watches.classes = inf
	return nil
}

// ingressListWatch lists and watches the Ingresses of ns ("" for all) with
// the labels option applied.
func ingressListWatch(c kubernetes.Interface, ns string, tweak func(*meta.ListOptions)) cache.ListerWatcher {
	opts := func(o meta.ListOptions) meta.ListOptions {
		if tweak != nil {
			tweak(&o)
		}
		return o
	}
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o meta.ListOptions) (runtime.Object, error) {
			return c.NetworkingV1().Ingresses(ns).List(ctx, opts(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o meta.ListOptions) (watch.Interface, error) {
			return c.NetworkingV1().Ingresses(ns).Watch(ctx, opts(o))
		},
	}, c)
}

// ingressKey is the FIFO's key of an Ingress or of its entry.
func ingressKey(obj any) (string, error) {
	if e, ok := obj.(*ingressEntry); ok {
		return e.key, nil
	}
	return cache.MetaNamespaceKeyFunc(obj)
}

// ingressStore is the Ingress watches' whole state: the entry (ingress.go)
// of every Ingress that names a host, which is also its owner in the claims.
// An Ingress that names none claims nothing and is not kept. Guarded by
// hostCache.mu.
type ingressStore struct {
	hc      *hostCache
	entries map[string]*ingressEntry // "namespace/name" -> entry
}

func newIngressStore(hc *hostCache) *ingressStore {
	return &ingressStore{hc: hc, entries: map[string]*ingressEntry{}}
}

// upsertLocked applies an Ingress as it is now.
func (s *ingressStore) upsertLocked(e *ingressEntry, now time.Time) {
	cur, ok := s.entries[e.key]
	switch {
	case len(e.hosts) == 0:
		s.removeLocked(e.key, now)
		return
	case !ok:
		s.entries[e.key], cur = e, e
	case cur != e: // a resync hands the entry itself back
		// The names of e share one string (pack): take the key from it
		// too, here and as the map's key, so that the old one can go.
		cur.key, cur.class, cur.hosts = e.key, e.class, e.hosts
		s.entries[e.key] = cur
	}
	s.hc.setClaimsLocked(&cur.owner, s.hc.ingressClaimsLocked(cur), now)
}

func (s *ingressStore) removeLocked(key string, now time.Time) {
	if cur, ok := s.entries[key]; ok {
		s.hc.setClaimsLocked(&cur.owner, ownerClaims{}, now)
		delete(s.entries, key)
	}
}

// reclaimAllLocked recomputes every Ingress's claims: the targets or the
// default class changed.
func (s *ingressStore) reclaimAllLocked(now time.Time) {
	for _, e := range s.entries {
		s.hc.setClaimsLocked(&e.owner, s.hc.ingressClaimsLocked(e), now)
	}
}

// ingressView is the store as the watch of one namespace ("" for all) sees
// it, so that a relist there tombstones only that namespace's Ingresses.
type ingressView struct {
	s  *ingressStore
	ns string
}

// ListKeys implements cache.KeyListerGetter.
func (v ingressView) ListKeys() []string {
	v.s.hc.mu.Lock()
	defer v.s.hc.mu.Unlock()
	keys := make([]string, 0, len(v.s.entries))
	for key := range v.s.entries {
		if ns, _, _ := strings.Cut(key, "/"); v.ns == "" || ns == v.ns {
			keys = append(keys, key)
		}
	}
	return keys
}

// GetByKey implements cache.KeyListerGetter.
func (v ingressView) GetByKey(key string) (any, bool, error) {
	v.s.hc.mu.Lock()
	defer v.s.hc.mu.Unlock()
	e, ok := v.s.entries[key]
	return e, ok, nil
}

func (v ingressView) apply(d cache.Delta, now time.Time) {
	switch o := d.Object.(type) {
	case cache.DeletedFinalStateUnknown: // a delete that a relist discovered
		v.s.removeLocked(o.Key, now)
	case *ingressEntry:
		if d.Type == cache.Deleted {
			v.s.removeLocked(o.key, now)
		} else { // Added, Updated, Replaced (a relist), Sync (a resync)
			v.s.upsertLocked(o, now)
		}
	}
}

func filtersClasses(classes []string) bool {
	return len(classes) > 0 && !slices.Contains(classes, "*")
}

// ingressClaimsLocked is what e contributes under the current targets and
// default class.
func (hc *hostCache) ingressClaimsLocked(e *ingressEntry) ownerClaims {
	return hc.claimsFor(e.hosts, hc.ingressSelectionLocked(e.classOf(hc.defaultClass)))
}

// ingressSelectionLocked is targets.forIngress, remembered per class until
// the targets change: 100,000 Ingresses over 100 targets ask it 100,000
// times, for a few dozen classes.
func (hc *hostCache) ingressSelectionLocked(class string) selection {
	if sel, ok := hc.byClass[class]; ok {
		return sel
	}
	sel := hc.targets.forIngress(class)
	if len(hc.byClass) < maxRememberedClasses {
		hc.byClass[class] = sel
	}
	return sel
}

// maxRememberedClasses bounds byClass against a flood of class names.
const maxRememberedClasses = 1024

// claimsFor is what an object that names hosts contributes with the target
// sel chose for it.
func (hc *hostCache) claimsFor(hosts []string, sel selection) ownerClaims {
	if sel.Target == nil {
		return ownerClaims{unselected: len(hosts) > 0}
	}
	served, rejected := rules.ClassifyHosts(hosts, hc.settings.zones, sel.Target.Spec.Zones)
	return ownerClaims{hosts: served, rejected: rejected, target: sel.Target, conflict: sel.Conflict}
}

// onIngressClassLocked recomputes every Ingress when the default class
// changes: Ingresses that name no class follow the default.
func (hc *hostCache) onIngressClassLocked() {
	var classes []rules.IngressClass
	for _, obj := range hc.watches.classes.GetStore().List() {
		if ic, ok := obj.(*cachedIngressClass); ok {
			classes = append(classes, ic.class)
		}
	}
	def := rules.DefaultIngressClass(classes)
	if def == hc.defaultClass {
		return
	}
	log.Infof("default IngressClass is now %q", def)
	hc.defaultClass = def
	hc.ingresses.reclaimAllLocked(time.Now())
}
