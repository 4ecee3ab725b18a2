package hairpin

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
)

// defaultDiscoveryInterval is how often the Gateway API kinds that were not
// served yet are looked for again, so CRDs installed later are picked up
// without a restart. A failed discovery is retried sooner, with backoff up
// to it.
const defaultDiscoveryInterval = 30 * time.Second

// discoveryInterval is the settings' interval, or the default.
func (hc *hostCache) discoveryInterval() time.Duration {
	if d := hc.settings.discoveryInterval; d > 0 {
		return d
	}
	return defaultDiscoveryInterval
}

// gatewayWatches are the Gateway API informers of one cache. They start only
// once a target selects Gateways (or gateway_class is set), so a cluster
// without Gateway API, or without RBAC for it, is never asked. Every field
// is guarded by hostCache.mu.
type gatewayWatches struct {
	wanted    bool
	factories []gwinformers.SharedInformerFactory // one per watched namespace
	gateways  []cache.SharedIndexInformer
	routes    []cache.SharedIndexInformer
	started   map[string]string        // kind -> version being watched
	missing   map[string]bool          // kinds whose absence was logged
	applied   map[ownerRef]specVersion // Gateway -> spec last applied
	routeGWs  map[ownerRef][]ownerRef  // route -> the per-Gateway owners it set
	discovery *kindWatch
}

// specVersion identifies one spec of one object: a Gateway deleted and
// recreated during a watch gap comes back with generation 1 but a new UID.
type specVersion struct {
	uid        types.UID
	generation int64
}

// ensureGatewayWatchesLocked starts Gateway API discovery the first time a
// target needs it. It makes no network call: discovery runs in its own
// goroutine. The caller holds hc.mu and runs inside hc.wg.
func (hc *hostCache) ensureGatewayWatchesLocked() {
	gws := &hc.gateway
	if gws.wanted || (len(hc.settings.gatewayClasses) == 0 && !hc.targets.selectsGateways()) {
		return
	}
	if hc.clients.gateway == nil || hc.clients.discovery == nil {
		return
	}
	gws.wanted = true
	gws.started = map[string]string{}
	gws.missing = map[string]bool{}
	gws.applied = map[ownerRef]specVersion{}
	gws.routeGWs = map[ownerRef][]ownerRef{}
	s := hc.settings
	for _, ns := range hc.watchedNamespaces() {
		opts := []gwinformers.SharedInformerOption{gwinformers.WithTransform(slimGatewayAPI(!s.labels.Empty()))}
		if ns != meta.NamespaceAll {
			opts = append(opts, gwinformers.WithNamespace(ns))
		}
		if tweak := hc.labelTweak(); tweak != nil {
			opts = append(opts, gwinformers.WithTweakListOptions(tweak))
		}
		gws.factories = append(gws.factories, gwinformers.NewSharedInformerFactoryWithOptions(hc.clients.gateway, 0, opts...))
	}
	gws.discovery = hc.addKind("gatewayapi", !hc.open.Load())
	hc.wg.Add(1)
	go hc.discoveryLoop()
}

// discoveryLoop looks for the Gateway API kinds until every one is watched.
func (hc *hostCache) discoveryLoop() {
	defer hc.wg.Done()
	wait := time.Duration(0)
	for {
		select {
		case <-hc.stopCh:
			return
		case <-time.After(wait):
		}
		err := hc.discoverGatewayAPI()
		switch {
		case err != nil:
			hc.gateway.discovery.onError(context.Background(), nil, err)
			wait = min(max(2*wait, time.Second), hc.discoveryInterval())
		default:
			d := hc.gateway.discovery
			if !d.synced.Load() {
				d.synced.Store(true)
				kindSynced.WithLabelValues(hc.id, d.kind).Set(1)
			}
			if hc.allGatewayKindsStarted() {
				return
			}
			wait = hc.discoveryInterval()
		}
	}
}

func (hc *hostCache) allGatewayKindsStarted() bool {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return len(hc.gateway.started) == 1+len(routeKinds)
}

// discoverGatewayAPI starts an informer for every kind that the cluster now
// serves and that is not watched yet. A missing kind is logged once.
func (hc *hostCache) discoverGatewayAPI() error {
	served, err := hc.servedGatewayResources()
	if err != nil {
		return err
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	gws := &hc.gateway
	if _, ok := gws.started["gateway"]; !ok {
		if !served[gw.GroupVersion.Version+"/gateways"] {
			hc.logMissingKindLocked("Gateway", gw.GroupVersion.Version)
		} else {
			k := hc.newGatewayKindLocked("gateway", gw.GroupVersion.Version)
			for _, f := range gws.factories {
				inf := f.Gateway().V1().Gateways().Informer()
				if err := hc.handle(k, inf, hc.onGatewayLocked, hc.onGatewayDeleteLocked); err != nil {
					return err
				}
				gws.gateways = append(gws.gateways, inf)
			}
			hc.startKindLocked(k)
		}
	}
	for _, rk := range routeKinds {
		if _, ok := gws.started[rk.kind.String()]; ok {
			continue
		}
		v, ok := rk.firstServed(served)
		if !ok {
			hc.logMissingKindLocked(rk.kind.String(), "any known version")
			continue
		}
		k := hc.newGatewayKindLocked(rk.kind.String(), v)
		for _, f := range gws.factories {
			inf, err := rk.informer(f, v)
			if err != nil {
				return fmt.Errorf("watching %s %s: %w", rk.kind, v, err)
			}
			if err := hc.handle(k, inf, hc.onRouteLocked, hc.onRouteDeleteLocked); err != nil {
				return err
			}
			gws.routes = append(gws.routes, inf)
		}
		hc.startKindLocked(k)
	}
	return nil
}

// newGatewayKindLocked registers a Gateway API kind; it gates readiness only
// when it starts before the cache opens.
func (hc *hostCache) newGatewayKindLocked(kind, version string) *kindWatch {
	hc.gateway.started[kind] = version
	log.Infof("watching Gateway API %s %s", kind, version)
	return hc.addKind(kind, !hc.open.Load())
}

// startKindLocked starts the factories (informers already started are left
// alone) and waits for the kind's first list in its own goroutine.
func (hc *hostCache) startKindLocked(k *kindWatch) {
	for _, f := range hc.gateway.factories {
		f.Start(hc.stopCh)
	}
	hc.wg.Add(1)
	go k.waitSynced()
}

// logMissingKindLocked says once per cache that a kind is not served.
func (hc *hostCache) logMissingKindLocked(kind, version string) {
	if hc.gateway.missing[kind] {
		return
	}
	hc.gateway.missing[kind] = true
	log.Infof("Gateway API %s (%s) is not served by the cluster; skipped, and looked for again every %s", kind, version, hc.discoveryInterval())
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

// lookupGatewayLocked finds a watched Gateway that the labels option
// selects.
func (hc *hostCache) lookupGatewayLocked(ns, name string) *rules.Gateway {
	for _, inf := range hc.gateway.gateways {
		obj, ok, err := inf.GetStore().GetByKey(ns + "/" + name)
		if err != nil || !ok {
			continue
		}
		if g, ok := obj.(*cachedGateway); ok && hc.selected(g.labels) {
			return &g.gateway
		}
	}
	return nil
}

// gatewayClaimsLocked is what a Gateway's own listener hostnames contribute.
func (hc *hostCache) gatewayClaimsLocked(g *cachedGateway) ownerClaims {
	if !hc.selected(g.labels) {
		return ownerClaims{}
	}
	return hc.claimsFor(g.gateway.Hostnames(), hc.targets.forGateway(g.namespace, g.name, g.gateway.Class))
}

// onGatewayLocked applies a Gateway's listener hostnames and re-evaluates
// the routes, whose attachment may have moved.
func (hc *hostCache) onGatewayLocked(obj any, now time.Time) {
	g, ok := obj.(*cachedGateway)
	if !ok {
		return
	}
	owner := gatewayOwner(g.namespace, g.name)
	// Status updates bump the resourceVersion but not the generation; only
	// a spec change, or a new object, can move route attachments.
	v := specVersion{uid: g.uid, generation: g.generation}
	if last, seen := hc.gateway.applied[owner]; seen && last == v && v.generation != 0 {
		return
	}
	hc.gateway.applied[owner] = v
	hc.setNamedClaimsLocked(owner, hc.gatewayClaimsLocked(g), now)
	hc.recomputeRoutesLocked(now)
}

func (hc *hostCache) onGatewayDeleteLocked(obj any, now time.Time) {
	g, ok := obj.(*cachedGateway)
	if !ok {
		return
	}
	owner := gatewayOwner(g.namespace, g.name)
	delete(hc.gateway.applied, owner)
	hc.setNamedClaimsLocked(owner, ownerClaims{}, now)
	hc.recomputeRoutesLocked(now)
}

// recomputeRoutesLocked re-evaluates every route after a Gateway changed.
func (hc *hostCache) recomputeRoutesLocked(now time.Time) {
	for _, inf := range hc.gateway.routes {
		for _, obj := range inf.GetStore().List() {
			hc.onRouteLocked(obj, now)
		}
	}
}

// onRouteLocked sets a route's hostnames per Gateway it attaches to: each
// Gateway may be fronted by another target, so each pair is its own owner.
func (hc *hostCache) onRouteLocked(obj any, now time.Time) {
	r, ok := obj.(*slimRoute)
	if !ok {
		return
	}
	route := routeOwner(r.route)
	var set []ownerRef
	if hc.selected(r.labels) {
		for _, gh := range rules.RouteHosts(r.route, hc.lookupGatewayLocked) {
			owner := route.through(gh.Gateway.Key())
			sel := hc.targets.forGateway(gh.Gateway.Namespace, gh.Gateway.Name, gh.Gateway.Class)
			hc.setNamedClaimsLocked(owner, hc.claimsFor(gh.Hosts, sel), now)
			set = append(set, owner)
		}
	}
	for _, old := range hc.gateway.routeGWs[route] {
		if !slices.Contains(set, old) {
			hc.setNamedClaimsLocked(old, ownerClaims{}, now)
		}
	}
	if len(set) == 0 {
		delete(hc.gateway.routeGWs, route)
	} else {
		hc.gateway.routeGWs[route] = set
	}
}

func (hc *hostCache) onRouteDeleteLocked(obj any, now time.Time) {
	r, ok := obj.(*slimRoute)
	if !ok {
		return
	}
	route := routeOwner(r.route)
	for _, old := range hc.gateway.routeGWs[route] {
		hc.setNamedClaimsLocked(old, ownerClaims{}, now)
	}
	delete(hc.gateway.routeGWs, route)
}
