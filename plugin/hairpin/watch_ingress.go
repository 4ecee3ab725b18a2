package hairpin

import (
	"slices"
	"time"
)

// watchIngresses registers the Ingress informers (one per watched
// namespace) and, when a target may filter by class, the IngressClass
// informer that tells the default class.
func (hc *hostCache) watchIngresses() error {
	s := hc.settings
	k := hc.addKind("ingress", true)
	for _, ns := range hc.watchedNamespaces() {
		f := hc.newFactory(ns, newCachedIngress(!s.labels.Empty()), hc.labelTweak())
		inf := f.Networking().V1().Ingresses().Informer()
		if err := hc.handle(k, inf, hc.onIngressLocked, hc.onIngressDeleteLocked); err != nil {
			return err
		}
		hc.watches.ingresses = append(hc.watches.ingresses, inf)
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

func filtersClasses(classes []string) bool {
	return len(classes) > 0 && !slices.Contains(classes, "*")
}

func ingressOwner(ns, name string) string { return "ingress/" + ns + "/" + name }

func (hc *hostCache) onIngressLocked(obj any, now time.Time) {
	if ing, ok := obj.(*cachedIngress); ok {
		hc.setClaimsLocked(ingressOwner(ing.namespace, ing.name), hc.ingressClaimsLocked(ing), now)
	}
}

func (hc *hostCache) onIngressDeleteLocked(obj any, now time.Time) {
	if ing, ok := obj.(*cachedIngress); ok {
		hc.setClaimsLocked(ingressOwner(ing.namespace, ing.name), ownerClaims{}, now)
	}
}

// ingressClaimsLocked is what ing contributes under the current targets and
// default class.
func (hc *hostCache) ingressClaimsLocked(ing *cachedIngress) ownerClaims {
	if !hc.selected(ing.labels) {
		return ownerClaims{}
	}
	sel := hc.targets.forIngress(ing.class(hc.defaultClass))
	return hc.claimsFor("ingress", ing.hosts, sel)
}

// claimsFor is what an object of kind that names hosts contributes with the
// target sel chose for it.
func (hc *hostCache) claimsFor(kind string, hosts []string, sel selection) ownerClaims {
	if sel.target == nil {
		return ownerClaims{kind: kind, unselected: len(hosts) > 0}
	}
	served, rejected := classifyHosts(hosts, hc.settings.zones, sel.target.sel.zones)
	return ownerClaims{kind: kind, hosts: served, rejected: rejected, target: sel.target, conflict: sel.conflict}
}

// onIngressClassLocked recomputes every Ingress when the default class
// changes: Ingresses that name no class follow the default.
func (hc *hostCache) onIngressClassLocked() {
	var classes []*cachedIngressClass
	for _, obj := range hc.watches.classes.GetStore().List() {
		if ic, ok := obj.(*cachedIngressClass); ok {
			classes = append(classes, ic)
		}
	}
	def := defaultIngressClass(classes)
	if def == hc.defaultClass {
		return
	}
	log.Infof("default IngressClass is now %q", def)
	hc.defaultClass = def
	now := time.Now()
	for _, inf := range hc.watches.ingresses {
		for _, obj := range inf.GetStore().List() {
			hc.onIngressLocked(obj, now)
		}
	}
}
