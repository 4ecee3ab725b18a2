package hairpin

import (
	"fmt"
	"slices"
	"time"

	core "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// watches are the informers of one cache.
type watches struct {
	factories []informers.SharedInformerFactory
	ingresses []cache.SharedIndexInformer
	classes   cache.SharedIndexInformer // nil unless ingress_class filters
	synced    []cache.InformerSynced    // one per handler registration
}

// start begins watching and returns at once; markSynced runs when every
// informer has delivered its first list to our handlers.
func (hc *hostCache) start() error {
	s := hc.settings
	selector := s.labels.String()
	for _, ns := range hc.watchedNamespaces() {
		f := informers.NewSharedInformerFactoryWithOptions(hc.clients.kube, 0,
			informers.WithNamespace(ns),
			informers.WithTweakListOptions(func(o *meta.ListOptions) { o.LabelSelector = selector }),
			informers.WithTransform(newCachedIngress(!s.labels.Empty())))
		inf := f.Networking().V1().Ingresses().Informer()
		if err := hc.watch(inf, hc.onIngress, hc.onIngressDelete); err != nil {
			return err
		}
		hc.watches.ingresses = append(hc.watches.ingresses, inf)
		hc.watches.factories = append(hc.watches.factories, f)
	}

	if filtersClasses(s.ingressClasses) {
		f := informers.NewSharedInformerFactoryWithOptions(hc.clients.kube, 0, informers.WithTransform(newCachedIngressClass))
		inf := f.Networking().V1().IngressClasses().Informer()
		onClass := func(any) { hc.onIngressClass() }
		if err := hc.watch(inf, onClass, onClass); err != nil {
			return err
		}
		hc.watches.classes = inf
		hc.watches.factories = append(hc.watches.factories, f)
	}

	reportProxyAddresses(hc.target.load())
	if len(s.proxyIPs) == 0 {
		byName := fields.OneTermEqualSelector("metadata.name", s.proxyName).String()
		f := informers.NewSharedInformerFactoryWithOptions(hc.clients.kube, 0,
			informers.WithNamespace(s.proxyNamespace),
			informers.WithTweakListOptions(func(o *meta.ListOptions) { o.FieldSelector = byName }),
			informers.WithTransform(slimService))
		inf := f.Core().V1().Services().Informer()
		onDelete := func(obj any) {
			if svc, ok := obj.(*core.Service); ok && svc.Name == s.proxyName {
				hc.onService(nil)
			}
		}
		if err := hc.watch(inf, hc.onService, onDelete); err != nil {
			return err
		}
		hc.watches.factories = append(hc.watches.factories, f)
	}

	for _, f := range hc.watches.factories {
		f.Start(hc.stopCh)
	}
	if len(s.gatewayClasses) > 0 {
		hc.watches.synced = append(hc.watches.synced, hc.startGatewayAPI()...)
	}
	hc.wg.Add(2)
	go hc.publishLoop()
	go func() {
		defer hc.wg.Done()
		if cache.WaitForCacheSync(hc.stopCh, hc.watches.synced...) {
			hc.markSynced()
		}
	}()
	return nil
}

// stop ends every watch and waits for the goroutines to exit, so a reload
// leaks neither.
func (hc *hostCache) stop() {
	close(hc.stopCh)
	hc.wg.Wait() // the discovery loop may still add informers until it exits
	for _, f := range hc.watches.factories {
		f.Shutdown()
	}
	for _, f := range hc.gateway.factories {
		f.Shutdown()
	}
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
	return hc.settings.labels.Matches(labels.Set(objLabels))
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

// watch registers handlers for adds and updates (onUpsert) and deletes.
func (hc *hostCache) watch(inf cache.SharedIndexInformer, onUpsert, onDelete func(any)) error {
	reg, err := inf.AddEventHandler(eventHandlers(onUpsert, onDelete))
	if err != nil {
		return fmt.Errorf("registering event handler: %w", err)
	}
	hc.watches.synced = append(hc.watches.synced, reg.HasSynced)
	return nil
}

func filtersClasses(classes []string) bool {
	return len(classes) > 0 && !slices.Contains(classes, "*")
}

func ingressOwner(ns, name string) string { return "ingress/" + ns + "/" + name }

func (hc *hostCache) onIngress(obj any) {
	ing, ok := obj.(*cachedIngress)
	if !ok {
		return
	}
	now := time.Now()
	hc.mu.Lock()
	defer hc.mu.Unlock()
	hc.setClaimsLocked(ingressOwner(ing.namespace, ing.name), hc.ingressClaims(ing), now)
}

func (hc *hostCache) onIngressDelete(obj any) {
	ing, ok := obj.(*cachedIngress)
	if !ok {
		return
	}
	now := time.Now()
	hc.mu.Lock()
	defer hc.mu.Unlock()
	hc.setClaimsLocked(ingressOwner(ing.namespace, ing.name), ownerClaims{}, now)
}

// ingressClaims is what ing contributes under the current default class. The
// caller holds hc.mu.
func (hc *hostCache) ingressClaims(ing *cachedIngress) ownerClaims {
	if !hc.selected(ing.labels) {
		return ownerClaims{}
	}
	if filtersClasses(hc.settings.ingressClasses) &&
		!slices.Contains(hc.settings.ingressClasses, ing.class(hc.defaultClass)) {
		return ownerClaims{}
	}
	served, rejected := classifyHosts(ing.hosts, hc.settings.zones)
	return ownerClaims{hosts: served, rejected: rejected, target: hc.target}
}

// onIngressClass recomputes every Ingress when the default class changes:
// Ingresses that name no class follow the default.
func (hc *hostCache) onIngressClass() {
	now := time.Now()
	var classes []*cachedIngressClass
	for _, obj := range hc.watches.classes.GetStore().List() {
		if ic, ok := obj.(*cachedIngressClass); ok {
			classes = append(classes, ic)
		}
	}
	def := defaultIngressClass(classes)

	hc.mu.Lock()
	defer hc.mu.Unlock()
	if def == hc.defaultClass {
		return
	}
	log.Infof("default IngressClass is now %q", def)
	hc.defaultClass = def
	for _, inf := range hc.watches.ingresses {
		for _, obj := range inf.GetStore().List() {
			if ing, ok := obj.(*cachedIngress); ok {
				hc.setClaimsLocked(ingressOwner(ing.namespace, ing.name), hc.ingressClaims(ing), now)
			}
		}
	}
}

// onService follows the proxy Service; nil means it was deleted. Other
// Services are ignored even if a server does not honour the field selector.
func (hc *hostCache) onService(obj any) {
	svc, _ := obj.(*core.Service)
	if svc != nil && svc.Name != hc.settings.proxyName {
		return
	}
	addrs := serviceAddrs(svc)
	if !hc.target.store(addrs) {
		return
	}
	reportProxyAddresses(addrs)
	if addrs.empty() {
		log.Warningf("proxy Service %s has no ClusterIP (missing or headless); queries for hairpin hosts pass through", hc.target.name)
		return
	}
	log.Infof("proxy Service %s: answering with %v %v", hc.target.name, addrs.v4, addrs.v6)
}

// slimService keeps only the ClusterIPs.
func slimService(obj any) (any, error) {
	svc, ok := obj.(*core.Service)
	if !ok {
		return obj, nil
	}
	return &core.Service{
		ObjectMeta: meta.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, ResourceVersion: svc.ResourceVersion},
		Spec:       core.ServiceSpec{ClusterIP: svc.Spec.ClusterIP, ClusterIPs: svc.Spec.ClusterIPs, Type: svc.Spec.Type},
	}, nil
}
