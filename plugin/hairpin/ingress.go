package hairpin

import (
	"strings"

	"github.com/coredns/coredns/plugin"

	networking "k8s.io/api/networking/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// legacyClassAnnotation predates spec.ingressClassName and is still set by
	// many charts.
	legacyClassAnnotation = "kubernetes.io/ingress.class"
	// defaultClassAnnotation marks the IngressClass used when an Ingress names none.
	defaultClassAnnotation = "ingressclass.kubernetes.io/is-default-class"
)

// Reasons a named host is not served, the values of the reason label.
const (
	reasonOutsideZones = "outside_zones"
	reasonInvalid      = "invalid"
)

// ingressClass returns the class of ing: spec.ingressClassName, else the
// legacy annotation, else the cluster's default class (which may be "").
func ingressClass(ing *networking.Ingress, defaultClass string) string {
	if ing.Spec.IngressClassName != nil && *ing.Spec.IngressClassName != "" {
		return *ing.Spec.IngressClassName
	}
	if c := ing.Annotations[legacyClassAnnotation]; c != "" {
		return c
	}
	return defaultClass
}

// ingressHosts returns every host that ing names, in rules and in tls.
func ingressHosts(ing *networking.Ingress) []string {
	hosts := make([]string, 0, len(ing.Spec.Rules)+len(ing.Spec.TLS))
	for _, r := range ing.Spec.Rules {
		hosts = append(hosts, r.Host)
	}
	for _, t := range ing.Spec.TLS {
		hosts = append(hosts, t.Hosts...)
	}
	return hosts
}

// classifyHosts normalises hosts to lowercase FQDNs and splits them into
// served hosts and rejected ones. Empty hosts (a rule for every host) name
// nothing and are dropped.
func classifyHosts(hosts []string, zones []string) (served []string, rejected []rejectedHost) {
	seen := make(map[string]struct{}, len(hosts))
	for _, h := range hosts {
		if h == "" {
			continue
		}
		fqdn := strings.ToLower(strings.TrimSuffix(h, ".")) + "."
		if _, dup := seen[fqdn]; dup {
			continue
		}
		seen[fqdn] = struct{}{}
		switch {
		case !validHost(fqdn):
			rejected = append(rejected, rejectedHost{host: fqdn, reason: reasonInvalid})
		case plugin.Zones(zones).Matches(fqdn) == "":
			rejected = append(rejected, rejectedHost{host: fqdn, reason: reasonOutsideZones})
		default:
			served = append(served, fqdn)
		}
	}
	return served, rejected
}

// validHost accepts a DNS-1123 subdomain, optionally with one leading "*."
// label, given as an FQDN.
func validHost(fqdn string) bool {
	h := strings.TrimSuffix(fqdn, ".")
	if strings.HasPrefix(h, "*.") {
		return len(validation.IsWildcardDNS1123Subdomain(h)) == 0
	}
	return len(validation.IsDNS1123Subdomain(h)) == 0
}

// slimIngressKeeping returns a transform that keeps only what the index
// reads, so the informer cache of a cluster with thousands of Ingresses stays
// small: no managedFields, no backends, only the class annotation, and labels
// only when a label selector is checked against them.
func slimIngressKeeping(keepLabels bool) func(any) (any, error) {
	return func(obj any) (any, error) {
		ing, ok := obj.(*networking.Ingress)
		if !ok {
			return obj, nil
		}
		slim := slimIngress(ing)
		if keepLabels {
			slim.Labels = ing.Labels
		}
		return slim, nil
	}
}

func slimIngress(ing *networking.Ingress) *networking.Ingress {
	slim := &networking.Ingress{
		ObjectMeta: slimMeta(ing.ObjectMeta, legacyClassAnnotation),
		Spec: networking.IngressSpec{
			IngressClassName: ing.Spec.IngressClassName,
		},
	}
	if len(ing.Spec.Rules) > 0 {
		slim.Spec.Rules = make([]networking.IngressRule, len(ing.Spec.Rules))
		for i, r := range ing.Spec.Rules {
			slim.Spec.Rules[i].Host = r.Host
		}
	}
	if len(ing.Spec.TLS) > 0 {
		slim.Spec.TLS = make([]networking.IngressTLS, len(ing.Spec.TLS))
		for i, t := range ing.Spec.TLS {
			slim.Spec.TLS[i].Hosts = t.Hosts
		}
	}
	return slim
}

// slimIngressClass keeps the name, age and default-class marker.
func slimIngressClass(obj any) (any, error) {
	ic, ok := obj.(*networking.IngressClass)
	if !ok {
		return obj, nil
	}
	return &networking.IngressClass{ObjectMeta: slimMeta(ic.ObjectMeta, defaultClassAnnotation)}, nil
}

// slimMeta keeps identity, age and the named annotations.
func slimMeta(m meta.ObjectMeta, keepAnnotations ...string) meta.ObjectMeta {
	out := meta.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Generation:        m.Generation,
		CreationTimestamp: m.CreationTimestamp,
	}
	for _, k := range keepAnnotations {
		if v, ok := m.Annotations[k]; ok {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
}

// defaultIngressClass picks the default class the way the DefaultIngressClass
// admission plugin does: among classes marked default, the newest wins, ties
// broken by name.
func defaultIngressClass(classes []*networking.IngressClass) string {
	var best *networking.IngressClass
	for _, ic := range classes {
		if ic.Annotations[defaultClassAnnotation] != "true" {
			continue
		}
		if best == nil || ic.CreationTimestamp.After(best.CreationTimestamp.Time) ||
			(ic.CreationTimestamp.Equal(&best.CreationTimestamp) && ic.Name < best.Name) {
			best = ic
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}
