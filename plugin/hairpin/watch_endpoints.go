package hairpin

import (
	"slices"
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// A discovered target takes hosts only once its Service has had a ready
// endpoint for each of its ports: a new target (a helm upgrade adds one for
// a controller, and the proxy Pods that serve its routes are still
// starting) would otherwise draw its hosts away from a path that works. It
// keeps them from then on while its Service exists, even while no endpoint
// is ready: the crash of its only proxy replica must not send clients back
// to the public address, which fails the same way and leaves them there
// for a cache's TTL after the proxy is back.

// cachedSlice is what the informer keeps of a target Service's
// EndpointSlice: the Service, and the names of the slice's ports when one
// of its endpoints is ready.
type cachedSlice struct {
	objectMeta
	service    string
	readyPorts []string // nil while no endpoint is ready
}

// DeepCopyObject implements runtime.Object.
func (c *cachedSlice) DeepCopyObject() runtime.Object { cp := *c; return &cp }

// slimSlice is the informer transform for EndpointSlices.
//
// A slice lists the ports that its Pods have: the EndpointSlice controller
// groups Pods by the Service ports it finds on them, and a Pod without a
// named target port is put in a slice without that port (k8s.io/endpointslice
// v0.37.2, utils.go getEndpointPorts and FindPort), which kube-proxy does not
// send that port's traffic to.
func slimSlice(obj any) (any, error) {
	s, ok := obj.(*discovery.EndpointSlice)
	if !ok {
		return obj, nil
	}
	c := &cachedSlice{objectMeta: newObjectMeta(s, false), service: s.Labels[discovery.LabelServiceName]}
	if slices.ContainsFunc(s.Endpoints, endpointReady) {
		c.readyPorts = make([]string, 0, len(s.Ports))
		for _, p := range s.Ports {
			c.readyPorts = append(c.readyPorts, ptr.Deref(p.Name, ""))
		}
	}
	return c, nil
}

// endpointReady reads the ready condition as kube-proxy does: unset is
// ready (k8s.io/kubernetes v1.37.2, pkg/proxy/endpointslicecache.go).
func endpointReady(ep discovery.Endpoint) bool {
	return ep.Conditions.Ready == nil || *ep.Conditions.Ready
}

// watchEndpoints follows the EndpointSlices of the target Services. The
// EndpointSlice controller copies a Service's labels onto its slices
// (k8s.io/endpointslice v0.37.2, utils.go setEndpointSliceLabels), so the
// target label selects exactly theirs.
func (hc *hostCache) watchEndpoints() error {
	f := hc.newFactory(hc.settings.targetsNamespace, slimSlice, func(o *meta.ListOptions) { o.LabelSelector = rules.TargetLabel })
	hc.slices = f.Discovery().V1().EndpointSlices().Informer()
	hc.sliceKind = hc.addKind("endpointslice", true)
	return hc.handle(hc.sliceKind, hc.slices, hc.onSliceLocked, hc.onSliceLocked)
}

// onSliceLocked follows the readiness of a target's Service: a waiting
// target takes its hosts once its slices say it can serve them.
func (hc *hostCache) onSliceLocked(obj any, now time.Time) {
	s, ok := obj.(*cachedSlice)
	if !ok {
		return
	}
	if t := hc.targets[s.namespace+"/"+s.service]; t != nil {
		hc.readinessLocked(t, now)
	}
}

// waitsForEndpointsLocked reports whether a new discovered target waits for
// a ready endpoint: only once the slices have listed. Until then (before the
// cache serves, nothing is answered anyway) or when they cannot be listed
// (RBAC without EndpointSlices) targets take their hosts as before.
func (hc *hostCache) waitsForEndpointsLocked() bool {
	return hc.sliceKind != nil && (!hc.open.Load() || hc.sliceKind.synced.Load())
}

// readinessLocked reads whether t's Service has a ready endpoint for each
// of its ports. A waiting target that has one takes its hosts within
// milliseconds of that watch event, as every change is served, but while
// serving it is Settling first (settle.go): the node's dataplane learns of
// the endpoint from the same event and programs it later, so a host that a
// Serving target answers moves only at the settle deadline. Before the
// cache serves, a ready target has been ready for an unknown while and
// settles at once.
func (hc *hostCache) readinessLocked(t *target, now time.Time) {
	if t.Spec.Direct != "" {
		return
	}
	was := t.Readiness
	ready := hc.readyForEachPortLocked(t)
	t.Unready = !ready
	switch {
	case !ready:
		t.readySince = time.Time{}
		t.stopSettle()
	case t.readySince.IsZero():
		t.readySince = now
	}
	if ready && t.Waiting {
		t.Waiting = false
		t.Settling = hc.settings.settle > 0 && hc.open.Load()
		log.Infof("target %s has a ready endpoint for each port; it takes its hosts", t.Name)
	}
	if ready && t.Settling {
		hc.settleLaterLocked(t)
	}
	// Whether a target is Unready counts only when a Settling one would
	// take its objects.
	if t.Waiting != was.Waiting || (t.Unready != was.Unready && hc.anySettlingLocked()) {
		hc.targetsChangedLocked()
	}
}

// readyForEachPortLocked reports whether t's Service has a ready endpoint
// for each of its ports.
func (hc *hostCache) readyForEachPortLocked(t *target) bool {
	ready := map[string]bool{}
	for _, obj := range hc.slices.GetStore().List() {
		if s, ok := obj.(*cachedSlice); ok && s.namespace+"/"+s.service == t.Name {
			for _, p := range s.readyPorts {
				ready[p] = true
			}
		}
	}
	for _, p := range t.ports {
		if !ready[p] {
			return false
		}
	}
	return true
}

// endEveryWaitLocked ends every wait when the cache starts serving before
// the slices listed: without them no target could ever serve.
func (hc *hostCache) endEveryWaitLocked() {
	if hc.sliceKind == nil || hc.sliceKind.synced.Load() {
		return
	}
	n := 0
	for _, t := range hc.targets {
		if t.Waiting {
			t.Waiting = false
			n++
		}
	}
	log.Warningf("EndpointSlices of the targets have not listed: %d targets take their hosts without waiting for a ready endpoint, as will new ones until they list", n)
	if n > 0 {
		hc.targetsChangedLocked()
	}
}
