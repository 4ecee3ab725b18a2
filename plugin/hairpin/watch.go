package hairpin

import (
	"fmt"
	"time"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// watches are the watches of the built-in kinds of one cache: the
// informers of the small kinds, and the Ingress watches into a store of
// their own (watchInto).
type watches struct {
	factories   []informers.SharedInformerFactory
	controllers []cache.Controller
	classes     cache.SharedIndexInformer // nil when no target filters by class
}

// newFactory is an informer factory for one namespace ("" for all) whose
// objects are slimmed by transform and, when the labels option is set,
// filtered by the server.
func (hc *hostCache) newFactory(ns string, transform cache.TransformFunc, tweak func(*meta.ListOptions)) informers.SharedInformerFactory {
	opts := []informers.SharedInformerOption{informers.WithTransform(transform)}
	if ns != meta.NamespaceAll {
		opts = append(opts, informers.WithNamespace(ns))
	}
	if tweak != nil {
		opts = append(opts, informers.WithTweakListOptions(tweak))
	}
	f := informers.NewSharedInformerFactoryWithOptions(hc.clients.kube, 0, opts...)
	hc.watches.factories = append(hc.watches.factories, f)
	return f
}

// labelTweak applies the labels option to a list.
func (hc *hostCache) labelTweak() func(*meta.ListOptions) {
	selector := hc.settings.labelString()
	if selector == "" {
		return nil
	}
	return func(o *meta.ListOptions) { o.LabelSelector = selector }
}

// watchedNamespaces is one namespace per watch, or every namespace.
func (hc *hostCache) watchedNamespaces() []string {
	if len(hc.settings.namespaces) == 0 {
		return []string{meta.NamespaceAll}
	}
	return hc.settings.namespaces
}

// selected reports whether an object's labels match the labels option. The
// server filters already; this holds when it does not (or a fake does not).
func (hc *hostCache) selected(objLabels map[string]string) bool {
	return hc.settings.labels == nil || hc.settings.labels.Matches(labels.Set(objLabels))
}

// eventHandlers calls onUpsert for adds and updates and onDelete for
// deletes, unwrapping the tombstone of a delete that a relist discovered.
func eventHandlers(onUpsert, onDelete func(any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    onUpsert,
		UpdateFunc: func(_, obj any) { onUpsert(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			onDelete(obj)
		},
	}
}

// handle wires onUpsert and onDelete, under hc.mu, to inf for kind.
func (hc *hostCache) handle(k *kindWatch, inf cache.SharedIndexInformer, onUpsert, onDelete func(obj any, now time.Time)) error {
	locked := func(f func(any, time.Time)) func(any) {
		return func(obj any) {
			now := time.Now()
			hc.mu.Lock()
			defer hc.mu.Unlock()
			f(obj, now)
		}
	}
	if err := k.informer(inf, eventHandlers(locked(onUpsert), locked(onDelete))); err != nil {
		return fmt.Errorf("watching %s: %w", k.kind, err)
	}
	return nil
}

// recomputeAllLocked re-evaluates every cached object against the current
// targets. It runs once per burst of target changes, not per event.
func (hc *hostCache) recomputeAllLocked(now time.Time) {
	hc.ingresses.reclaimAllLocked(now)
	for _, inf := range hc.gateway.gateways {
		for _, obj := range inf.GetStore().List() {
			if g, ok := obj.(*cachedGateway); ok {
				hc.setNamedClaimsLocked(gatewayOwner(g.namespace, g.name), hc.gatewayClaimsLocked(g), now)
			}
		}
	}
	hc.recomputeRoutesLocked(now)
}
