package hairpin

import (
	"slices"
	"time"

	networking "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	// legacyClassAnnotation predates spec.ingressClassName and is still set by
	// many charts.
	legacyClassAnnotation = "kubernetes.io/ingress.class"
	// defaultClassAnnotation marks the IngressClass used when an Ingress names none.
	defaultClassAnnotation = "ingressclass.kubernetes.io/is-default-class"
)

// cachedIngress is what the informer keeps of an Ingress: its class as
// written and the hosts it names, already lowercased FQDNs.
type cachedIngress struct {
	objectMeta
	className   string // spec.ingressClassName
	legacyClass string // the kubernetes.io/ingress.class annotation
	hosts       []string
}

// DeepCopyObject implements runtime.Object. Cached objects are never
// written after the transform, so the copy shares its slices.
func (c *cachedIngress) DeepCopyObject() runtime.Object { cp := *c; return &cp }

// newCachedIngress is the informer transform for Ingresses: it keeps only
// what the index reads, and the labels only when a selector is checked.
func newCachedIngress(keepLabels bool) func(any) (any, error) {
	return func(obj any) (any, error) {
		ing, ok := obj.(*networking.Ingress)
		if !ok {
			return obj, nil
		}
		c := &cachedIngress{objectMeta: newObjectMeta(ing, keepLabels), legacyClass: ing.Annotations[legacyClassAnnotation]}
		if ing.Spec.IngressClassName != nil {
			c.className = *ing.Spec.IngressClassName
		}
		// Only the rules route. spec.tls[].hosts name the certificate to
		// present; ingress-nginx builds its servers from the rules alone,
		// and a TLS host that no rule names is served by the catch-all
		// default server, not by this Ingress. A "*.example.com" wildcard
		// certificate must not send every name of the zone to the proxy.
		c.hosts = make([]string, 0, len(ing.Spec.Rules))
		for _, r := range ing.Spec.Rules {
			c.hosts = appendHost(c.hosts, r.Host)
		}
		return c, nil
	}
}

// appendHost adds host as a lowercase FQDN unless it is empty (a rule for
// every host) or already there.
func appendHost(hosts []string, host string) []string {
	if host == "" {
		return hosts
	}
	fqdn := toFQDN(host)
	if slices.Contains(hosts, fqdn) {
		return hosts
	}
	return append(hosts, fqdn)
}

// class returns the Ingress's class: spec.ingressClassName, else the legacy
// annotation, else the cluster's default class (which may be "").
func (c *cachedIngress) class(defaultClass string) string {
	if c.className != "" {
		return c.className
	}
	if c.legacyClass != "" {
		return c.legacyClass
	}
	return defaultClass
}

// cachedIngressClass is what the informer keeps of an IngressClass.
type cachedIngressClass struct {
	objectMeta
	created   time.Time
	isDefault bool
}

// DeepCopyObject implements runtime.Object.
func (c *cachedIngressClass) DeepCopyObject() runtime.Object { cp := *c; return &cp }

// newCachedIngressClass is the informer transform for IngressClasses.
func newCachedIngressClass(obj any) (any, error) {
	ic, ok := obj.(*networking.IngressClass)
	if !ok {
		return obj, nil
	}
	return &cachedIngressClass{
		objectMeta: newObjectMeta(ic, false),
		created:    ic.CreationTimestamp.Time,
		isDefault:  ic.Annotations[defaultClassAnnotation] == "true",
	}, nil
}

// defaultIngressClass picks the default class the way the DefaultIngressClass
// admission plugin does: among classes marked default, the newest wins, ties
// broken by name.
func defaultIngressClass(classes []*cachedIngressClass) string {
	var best *cachedIngressClass
	for _, ic := range classes {
		if !ic.isDefault {
			continue
		}
		if best == nil || ic.created.After(best.created) || (ic.created.Equal(best.created) && ic.name < best.name) {
			best = ic
		}
	}
	if best == nil {
		return ""
	}
	return best.name
}
