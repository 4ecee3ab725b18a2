package hairpin

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
)

// discoveryInterval is how often the Gateway API kinds that were not served
// yet are looked for again, so CRDs installed later are picked up without a
// restart.
var discoveryInterval = 30 * time.Second

// routeKind is one Gateway API route kind.
type routeKind struct {
	kind     string // lowercase, as in owner keys
	resource string // plural resource name in discovery
	versions []routeVersion
}

// routeVersion is one API version of a route kind.
type routeVersion struct {
	version  string
	informer func(gwinformers.SharedInformerFactory) cache.SharedIndexInformer
	view     func(obj any) (routeView, meta.ObjectMeta, bool)
}

func httpRouteV1Informer(f gwinformers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.Gateway().V1().HTTPRoutes().Informer()
}
func grpcRouteV1Informer(f gwinformers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.Gateway().V1().GRPCRoutes().Informer()
}
func grpcRouteV1a2Informer(f gwinformers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.Gateway().V1alpha2().GRPCRoutes().Informer()
}
func tlsRouteV1Informer(f gwinformers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.Gateway().V1().TLSRoutes().Informer()
}
func tlsRouteV1a3Informer(f gwinformers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.Gateway().V1alpha3().TLSRoutes().Informer()
}
func tlsRouteV1a2Informer(f gwinformers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.Gateway().V1alpha2().TLSRoutes().Informer()
}

// gatewayWatches are the Gateway API informers of one cache. Kinds start as
// discovery finds them; the fields are written by the discovery goroutine
// under hostCache.mu and read by handlers under it.
type gatewayWatches struct {
	factories   []gwinformers.SharedInformerFactory // one per watched namespace
	gateways    []cache.SharedIndexInformer
	routes      []cache.SharedIndexInformer
	started     map[string]string // kind -> version being watched
	generations map[string]int64  // gateway owner key -> spec generation last applied
	missing     map[string]bool   // kinds whose absence was logged
}

// startGatewayAPI discovers the Gateway API kinds and starts watching those
// that are served. It returns the sync functions of what it started.
func (hc *hostCache) startGatewayAPI() []cache.InformerSynced {
	s := hc.settings
	gws := &hc.gateway
	gws.started = map[string]string{}
	gws.generations = map[string]int64{}
	gws.missing = map[string]bool{}
	selector := s.labels.String()
	for _, ns := range hc.watchedNamespaces() {
		gws.factories = append(gws.factories, gwinformers.NewSharedInformerFactoryWithOptions(hc.clients.gateway, 0,
			gwinformers.WithNamespace(ns),
			gwinformers.WithTweakListOptions(func(o *meta.ListOptions) { o.LabelSelector = selector }),
			gwinformers.WithTransform(slimGatewayAPI(!s.labels.Empty()))))
	}
	synced := hc.discoverGatewayAPI()
	hc.wg.Add(1)
	go hc.rediscoverLoop()
	return synced
}

// rediscoverLoop looks again for kinds that were missing.
func (hc *hostCache) rediscoverLoop() {
	defer hc.wg.Done()
	t := time.NewTicker(discoveryInterval)
	defer t.Stop()
	for {
		select {
		case <-hc.stopCh:
			return
		case <-t.C:
			if len(hc.gatewayKindsStarted()) < 1+len(routeKinds) {
				hc.discoverGatewayAPI()
			}
		}
	}
}

func (hc *hostCache) gatewayKindsStarted() map[string]string {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	out := make(map[string]string, len(hc.gateway.started))
	for k, v := range hc.gateway.started {
		out[k] = v
	}
	return out
}

// discoverGatewayAPI starts an informer for every kind that the cluster now
// serves and that is not watched yet. A missing kind is logged once.
func (hc *hostCache) discoverGatewayAPI() []cache.InformerSynced {
	served, err := hc.servedGatewayResources()
	if err != nil {
		log.Warningf("Gateway API discovery failed, retrying in %s: %v", discoveryInterval, err)
		return nil
	}
	started := hc.gatewayKindsStarted()
	var synced []cache.InformerSynced
	if _, ok := started["gateway"]; !ok {
		if !served[gw.GroupVersion.Version+"/gateways"] {
			hc.logMissingKindOnce("Gateway", gw.GroupVersion.Version)
		} else {
			for _, f := range hc.gateway.factories {
				inf := f.Gateway().V1().Gateways().Informer()
				onGateway := func(obj any) { hc.onGateway(obj, false) }
				onDelete := func(obj any) { hc.onGateway(obj, true) }
				synced = append(synced, hc.watchGatewayAPI(inf, onGateway, onDelete))
				hc.addGatewayInformer("gateway", gw.GroupVersion.Version, inf, true)
			}
		}
	}
	for _, k := range routeKinds {
		if _, ok := started[k.kind]; ok {
			continue
		}
		v, ok := firstServed(k, served)
		if !ok {
			hc.logMissingKindOnce(k.kind, "any known version")
			continue
		}
		onRoute := func(obj any) { hc.onRoute(obj, false) }
		onDelete := func(obj any) { hc.onRoute(obj, true) }
		for _, f := range hc.gateway.factories {
			inf := v.informer(f)
			synced = append(synced, hc.watchGatewayAPI(inf, onRoute, onDelete))
			hc.addGatewayInformer(k.kind, v.version, inf, false)
		}
	}
	for _, f := range hc.gateway.factories {
		f.Start(hc.stopCh)
	}
	return synced
}

func firstServed(k routeKind, served map[string]bool) (routeVersion, bool) {
	for _, v := range k.versions {
		if served[v.version+"/"+k.resource] {
			return v, true
		}
	}
	return routeVersion{}, false
}

func (hc *hostCache) addGatewayInformer(kind, version string, inf cache.SharedIndexInformer, isGateway bool) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if isGateway {
		hc.gateway.gateways = append(hc.gateway.gateways, inf)
	} else {
		hc.gateway.routes = append(hc.gateway.routes, inf)
	}
	if _, ok := hc.gateway.started[kind]; !ok {
		log.Infof("watching Gateway API %s %s", kind, version)
	}
	hc.gateway.started[kind] = version
}

// logMissingKindOnce says once per cache that a kind is not served.
func (hc *hostCache) logMissingKindOnce(kind, version string) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.gateway.missing[kind] {
		return
	}
	hc.gateway.missing[kind] = true
	log.Infof("Gateway API %s (%s) is not served by the cluster; skipped, and looked for again every %s", kind, version, discoveryInterval)
}

// servedGatewayResources returns "version/resource" for every Gateway API
// resource the cluster serves.
func (hc *hostCache) servedGatewayResources() (map[string]bool, error) {
	served := map[string]bool{}
	for _, version := range []string{"v1", "v1alpha3", "v1alpha2"} {
		list, err := hc.clients.discovery.ServerResourcesForGroupVersion(gw.GroupName + "/" + version)
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("discovering %s/%s: %w", gw.GroupName, version, err)
		}
		for _, r := range list.APIResources {
			served[version+"/"+r.Name] = true
		}
	}
	return served, nil
}

// watchGatewayAPI registers handlers on an informer that may start after the
// first sync, so its sync function is returned rather than gated on.
func (hc *hostCache) watchGatewayAPI(inf cache.SharedIndexInformer, onUpsert, onDelete func(any)) cache.InformerSynced {
	reg, err := inf.AddEventHandler(eventHandlers(onUpsert, onDelete))
	if err != nil {
		log.Errorf("registering Gateway API event handler: %v", err)
		return func() bool { return true }
	}
	return reg.HasSynced
}

// lookupGatewayLocked finds a watched Gateway that matches the class.
func (hc *hostCache) lookupGatewayLocked(ns, name string) *gw.Gateway {
	for _, inf := range hc.gateway.gateways {
		obj, ok, err := inf.GetStore().GetByKey(ns + "/" + name)
		if err != nil || !ok {
			continue
		}
		if g, ok := obj.(*gw.Gateway); ok && gatewayMatches(g, hc.settings.gatewayClasses) && hc.selected(g.Labels) {
			return g
		}
	}
	return nil
}

// onGateway applies a Gateway's listener hostnames and re-evaluates the
// routes, whose attachment may have moved.
func (hc *hostCache) onGateway(obj any, deleted bool) {
	g, ok := obj.(*gw.Gateway)
	if !ok {
		return
	}
	now := time.Now()
	owner := gatewayOwner(g.Namespace, g.Name)
	hc.mu.Lock()
	defer hc.mu.Unlock()
	var oc ownerClaims
	if deleted {
		delete(hc.gateway.generations, owner)
	} else {
		// Status updates bump the resourceVersion but not the generation;
		// only a spec change can move route attachments.
		if gen, seen := hc.gateway.generations[owner]; seen && gen == g.Generation && g.Generation != 0 {
			return
		}
		hc.gateway.generations[owner] = g.Generation
		if gatewayMatches(g, hc.settings.gatewayClasses) && hc.selected(g.Labels) {
			served, rejected := classifyHosts(listenerHostnames(g), hc.settings.zones)
			oc = ownerClaims{hosts: served, rejected: rejected, target: hc.target}
		}
	}
	hc.setClaimsLocked(owner, oc, now)
	hc.recomputeRoutesLocked(now)
}

// recomputeRoutesLocked re-evaluates every route after a Gateway changed.
func (hc *hostCache) recomputeRoutesLocked(now time.Time) {
	for _, inf := range hc.gateway.routes {
		for _, obj := range inf.GetStore().List() {
			if r, ok := obj.(*slimRoute); ok {
				hc.setClaimsLocked(r.view.owner(), hc.routeClaimsLocked(r), now)
			}
		}
	}
}

func (hc *hostCache) onRoute(obj any, deleted bool) {
	r, ok := obj.(*slimRoute)
	if !ok {
		return
	}
	now := time.Now()
	hc.mu.Lock()
	defer hc.mu.Unlock()
	var oc ownerClaims
	if !deleted {
		oc = hc.routeClaimsLocked(r)
	}
	hc.setClaimsLocked(r.view.owner(), oc, now)
}

func (hc *hostCache) routeClaimsLocked(r *slimRoute) ownerClaims {
	if !hc.selected(r.labels) {
		return ownerClaims{}
	}
	served, rejected := classifyHosts(routeHostnames(r.view, hc.lookupGatewayLocked), hc.settings.zones)
	return ownerClaims{hosts: served, rejected: rejected, target: hc.target}
}
