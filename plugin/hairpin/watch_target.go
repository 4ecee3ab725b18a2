package hairpin

import (
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	core "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// cachedService is what the informer keeps of a target Service: its
// ClusterIPs and our annotations.
type cachedService struct {
	objectMeta
	addrs       *proxyAddrs
	ports       []string          // the names of its ports
	annotations map[string]string // only the hairpin.coredns-hairpin.io/ keys
	isTarget    bool              // carries the target label
}

// DeepCopyObject implements runtime.Object.
func (c *cachedService) DeepCopyObject() runtime.Object { cp := *c; return &cp }

// slimService is the informer transform for Services.
func slimService(obj any) (any, error) {
	svc, ok := obj.(*core.Service)
	if !ok {
		return obj, nil
	}
	c := &cachedService{objectMeta: newObjectMeta(svc, false), addrs: serviceAddrs(svc)}
	for _, p := range svc.Spec.Ports {
		c.ports = append(c.ports, p.Name)
	}
	_, c.isTarget = svc.Labels[rules.TargetLabel]
	c.annotations = rules.TargetAnnotations(svc.Annotations)
	return c, nil
}

// watchTargets follows the Services that answers point at: every labelled
// Service in the targets namespace, or the one Service of `proxy`. proxy_ip
// needs no watch.
func (hc *hostCache) watchTargets() error {
	s := hc.settings
	switch {
	case len(s.proxyIPs) > 0:
		t := hc.targets["proxy_ip"]
		reportTarget(hc.id, t)
		return nil
	case s.explicit():
		byName := fields.OneTermEqualSelector("metadata.name", s.proxyName).String()
		f := hc.newFactory(s.proxyNamespace, slimService, func(o *meta.ListOptions) { o.FieldSelector = byName })
		return hc.handle(hc.addKind("service", true), f.Core().V1().Services().Informer(), hc.onProxyServiceLocked, hc.onProxyServiceDeleteLocked)
	default:
		f := hc.newFactory(s.targetsNamespace, slimService, func(o *meta.ListOptions) { o.LabelSelector = rules.TargetLabel })
		if err := hc.handle(hc.addKind("service", true), f.Core().V1().Services().Informer(), hc.onTargetLocked, hc.onTargetDeleteLocked); err != nil {
			return err
		}
		return hc.watchEndpoints()
	}
}

// onProxyServiceLocked follows the Service of `proxy`. Other Services are
// ignored even if a server does not honour the field selector.
func (hc *hostCache) onProxyServiceLocked(obj any, _ time.Time) {
	svc, ok := obj.(*cachedService)
	if !ok || svc.name != hc.settings.proxyName {
		return
	}
	hc.storeAddrs(hc.targets[svc.key()], svc.addrs)
}

func (hc *hostCache) onProxyServiceDeleteLocked(obj any, _ time.Time) {
	if svc, ok := obj.(*cachedService); ok && svc.name == hc.settings.proxyName {
		hc.storeAddrs(hc.targets[svc.key()], noAddrs)
	}
}

// onTargetLocked adds or updates a discovered target. A change of what it
// selects recomputes every object; a change of address is one atomic store.
func (hc *hostCache) onTargetLocked(obj any, now time.Time) {
	svc, ok := obj.(*cachedService)
	if !ok {
		return
	}
	if !svc.isTarget {
		hc.onTargetDeleteLocked(obj, time.Time{})
		return
	}
	rt := rules.NewTarget(svc.key(), svc.annotations)
	t, known := hc.targets[svc.key()]
	switch {
	case rt.Spec.Direct != "":
		// Answered with another Service: no proxy of ours has to come
		// up first.
	case known:
		rt.Readiness = t.Readiness
	default:
		rt.Waiting = hc.waitsForEndpointsLocked()
	}
	switch {
	case !known:
		t = newTarget(*rt)
		hc.targets[t.Name] = t
		hc.logSelection(t)
		// A chart creates CoreDNS's RBAC just before its targets: a
		// list refused until now is likely allowed.
		hc.clients.wakeRetries()
		hc.targetsChangedLocked()
	case !t.Same(rt):
		t.Target = *rt
		hc.logSelection(t)
		hc.targetsChangedLocked()
		hc.pruneDirectLocked()
	}
	if t.Spec.Direct != "" {
		// Answered with the named Service's addresses; its own Service only
		// carries the annotations.
		hc.directLocked(t)
		return
	}
	delete(hc.directMissing, t.Name)
	hc.storeAddrs(t, svc.addrs)
	t.ports = svc.ports
	hc.readinessLocked(t, now)
}

// onTargetDeleteLocked removes a target. Its addresses go first, so queries
// for its hosts pass through at once, before the index is rebuilt.
func (hc *hostCache) onTargetDeleteLocked(obj any, _ time.Time) {
	svc, ok := obj.(*cachedService)
	if !ok {
		return
	}
	t, known := hc.targets[svc.key()]
	if !known {
		return
	}
	t.store(noAddrs)
	t.stopSettle()
	delete(hc.targets, t.Name)
	delete(hc.directMissing, t.Name)
	hc.pruneDirectLocked()
	deleteTargetMetrics(hc.id, t.Name)
	log.Infof("target %s removed; its hosts pass through", t.Name)
	hc.targetsChangedLocked()
}

// storeAddrs sets a target's addresses and says so when they change.
func (hc *hostCache) storeAddrs(t *target, a *proxyAddrs) {
	if t == nil {
		return
	}
	changed := t.store(a)
	reportTarget(hc.id, t)
	if !changed {
		return
	}
	if a.empty() {
		log.Warningf("target %s has no ClusterIP (missing or headless); queries for its hosts pass through", t.Name)
		return
	}
	log.Infof("target %s: answering with %v %v", t.Name, a.v4, a.v6)
}

// logSelection says what a discovered target selects, or why it is
// disabled; called once per change.
func (hc *hostCache) logSelection(t *target) {
	if !t.Enabled() {
		err := t.Err
		if err == nil {
			err = rules.ErrNoZones
		}
		log.Errorf("target %s is disabled: %v", t.Name, err)
		return
	}
	s := t.Spec
	if s.Direct != "" {
		log.Infof("target %s: zones %v, ingress classes %v, gateway classes %v, gateways %v, answered with Service %s (direct)", t.Name, s.Zones, s.IngressClasses, s.GatewayClasses, s.Gateways, s.Direct)
		return
	}
	log.Infof("target %s: zones %v, ingress classes %v, gateway classes %v, gateways %v", t.Name, s.Zones, s.IngressClasses, s.GatewayClasses, s.Gateways)
}
