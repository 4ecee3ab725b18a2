package rules

import (
	"time"

	networking "k8s.io/api/networking/v1"
)

const (
	// LegacyIngressClassAnnotation predates spec.ingressClassName and is
	// still set by many charts.
	LegacyIngressClassAnnotation = "kubernetes.io/ingress.class"
	// DefaultIngressClassAnnotation marks the IngressClass used when an
	// Ingress names none.
	DefaultIngressClassAnnotation = "ingressclass.kubernetes.io/is-default-class"
)

// IngressHosts returns the hosts an Ingress's rules name, as lowercase
// FQDNs, each once.
//
// Only the rules route. spec.tls[].hosts name the certificate to present;
// ingress-nginx builds its servers from the rules alone, and a TLS host that
// no rule names is served by the catch-all default server, not by this
// Ingress. A "*.example.com" wildcard certificate must not send every name
// of the zone to the proxy.
func IngressHosts(ing *networking.Ingress) []string {
	hosts := make([]string, 0, len(ing.Spec.Rules))
	for _, r := range ing.Spec.Rules {
		hosts = appendHost(hosts, r.Host)
	}
	return hosts
}

// IngressClassName is the class an Ingress names: spec.ingressClassName,
// else the legacy annotation; "" follows the cluster's default class.
func IngressClassName(ing *networking.Ingress) string {
	if c := ing.Spec.IngressClassName; c != nil && *c != "" {
		return *c
	}
	return ing.Annotations[LegacyIngressClassAnnotation]
}

// IngressClass is what choosing the default class reads of an IngressClass.
type IngressClass struct {
	Name      string
	Created   time.Time
	IsDefault bool
}

// ReadIngressClass keeps of ic what DefaultIngressClass reads.
func ReadIngressClass(ic *networking.IngressClass) IngressClass {
	return IngressClass{Name: ic.Name, Created: ic.CreationTimestamp.Time, IsDefault: ic.Annotations[DefaultIngressClassAnnotation] == "true"}
}

// DefaultIngressClass picks the default class the way the DefaultIngressClass
// admission plugin does: among classes marked default, the newest wins, ties
// broken by name. It is "" when no class is marked.
func DefaultIngressClass(classes []IngressClass) string {
	var best *IngressClass
	for i := range classes {
		ic := &classes[i]
		if !ic.IsDefault {
			continue
		}
		if best == nil || ic.Created.After(best.Created) || (ic.Created.Equal(best.Created) && ic.Name < best.Name) {
			best = ic
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}
