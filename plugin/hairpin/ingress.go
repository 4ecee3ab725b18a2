package hairpin

import (
	"strings"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	networking "k8s.io/api/networking/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ingressEntry is all that is kept of an Ingress: its key, its class as
// written and the hosts its rules name, and what it claims. The Ingress
// watch's store holds these and nothing else (watch_ingress.go), so 100,000
// Ingresses cost a few hundred bytes each, not a copy of every object.
type ingressEntry struct {
	owner          // key "namespace/name"
	class string   // spec.ingressClassName, else the legacy annotation; "" follows the default class
	hosts []string // the rules' hosts, lowercase FQDNs, each once
}

// GetObjectMeta makes an entry readable by meta.Accessor, which the
// reflector's watch-list store keys objects by.
func (e *ingressEntry) GetObjectMeta() meta.Object {
	ns, name, _ := strings.Cut(e.key, "/")
	return &objectMeta{namespace: ns, name: name}
}

// newIngressEntry is the transform of the Ingress watch: it keeps only what
// the index reads. An Ingress that the labels option does not select names
// no hosts. Anything else passes unchanged (the FIFO transforms a relist's
// entries again).
func newIngressEntry(selected func(map[string]string) bool, classes *interner) func(any) (any, error) {
	return func(obj any) (any, error) {
		ing, ok := obj.(*networking.Ingress)
		if !ok {
			return obj, nil
		}
		e := &ingressEntry{owner: owner{ownerRef: ownerRef{kind: rules.KindIngress, key: ing.Namespace + "/" + ing.Name}}}
		if !selected(ing.Labels) {
			return e, nil
		}
		e.class = classes.intern(rules.IngressClassName(ing))
		if hosts := rules.IngressHosts(ing); len(hosts) > 0 {
			e.key, e.hosts = pack(e.key, hosts)
		}
		return e, nil
	}
}

// pack copies key and hosts into one string, and returns them as slices of
// it, in hosts' place: an Ingress keeps one allocation for all its names.
func pack(key string, hosts []string) (string, []string) {
	n := len(key)
	for _, h := range hosts {
		n += len(h)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(key)
	for _, h := range hosts {
		b.WriteString(h)
	}
	all := b.String()
	off := len(key)
	for i, h := range hosts {
		hosts[i] = all[off : off+len(h)]
		off += len(h)
	}
	return all[:len(key)], hosts
}

// classOf returns the Ingress's class: spec.ingressClassName, else the
// legacy annotation, else the cluster's default class (which may be "").
func (e *ingressEntry) classOf(defaultClass string) string {
	if e.class != "" {
		return e.class
	}
	return defaultClass
}

// cachedIngressClass is what the informer keeps of an IngressClass.
type cachedIngressClass struct {
	objectMeta
	class rules.IngressClass
}

// DeepCopyObject implements runtime.Object.
func (c *cachedIngressClass) DeepCopyObject() runtime.Object { cp := *c; return &cp }

// newCachedIngressClass is the informer transform for IngressClasses.
func newCachedIngressClass(obj any) (any, error) {
	ic, ok := obj.(*networking.IngressClass)
	if !ok {
		return obj, nil
	}
	return &cachedIngressClass{objectMeta: newObjectMeta(ic, false), class: rules.ReadIngressClass(ic)}, nil
}
