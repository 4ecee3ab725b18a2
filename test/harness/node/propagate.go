package node

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// tokenCheckPeriod is how often the Pods' volumes are rendered again, so
// that service-account tokens are refreshed before they expire.
const tokenCheckPeriod = 30 * time.Second

// watchVolumeSources rewrites the volumes of the Pods that read a
// ConfigMap or Secret as soon as it changes: kubelet's propagation, here
// driven by the watch instead of a sync period.
func (n *Node) watchVolumeSources() error {
	for kind, inf := range map[string]cache.SharedIndexInformer{
		"ConfigMap": n.factory.Core().V1().ConfigMaps().Informer(),
		"Secret":    n.factory.Core().V1().Secrets().Informer(),
	} {
		changed := func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			var ns, name string
			switch o := obj.(type) {
			case *corev1.ConfigMap:
				ns, name = o.Namespace, o.Name
			case *corev1.Secret:
				ns, name = o.Namespace, o.Name
			default:
				return
			}
			for _, p := range n.podsIn(ns) {
				if p.uses(kind, name) {
					p.kickVolumes()
				}
			}
		}
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    changed,
			UpdateFunc: func(_, obj any) { changed(obj) },
			DeleteFunc: changed,
		})
		if err != nil {
			return fmt.Errorf("node: watch %ss: %w", kind, err)
		}
	}
	return nil
}

// refreshVolumes re-renders every Pod's volumes periodically (tokens).
func (n *Node) refreshVolumes() {
	t := time.NewTicker(tokenCheckPeriod)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
			for _, p := range n.podsIn("") {
				p.kickVolumes()
			}
		}
	}
}

// podsIn returns the Pods of namespace ns ("" for all).
func (n *Node) podsIn(ns string) []*pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*pod
	for _, p := range n.pods {
		if ns == "" || strings.HasPrefix(p.key, ns+"/") {
			out = append(out, p)
		}
	}
	return out
}
