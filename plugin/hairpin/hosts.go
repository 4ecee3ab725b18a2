package hairpin

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Reasons a named host is not served, the values of the reason label.
const (
	reasonOutsideZones = "outside_zones"
	reasonInvalid      = "invalid"
)

// classifyHosts normalises hosts to lowercase FQDNs and splits them into the
// hosts served and the hosts rejected. A host is served only inside both the
// stanza's zones and its target's zones: the stanza bounds the server block,
// the target bounds what one controller's tenants may claim. Empty hosts (a
// rule for every host) name nothing and are dropped.
func classifyHosts(hosts []string, stanzaZones, targetZones []string) (served []string, rejected []rejectedHost) {
	for _, h := range hosts {
		if h == "" {
			continue
		}
		fqdn := toFQDN(h)
		if slices.Contains(served, fqdn) || slices.ContainsFunc(rejected, func(r rejectedHost) bool { return r.host == fqdn }) {
			continue
		}
		switch {
		case !validHost(fqdn):
			rejected = append(rejected, rejectedHost{host: fqdn, reason: reasonInvalid})
		case !inZones(stanzaZones, fqdn) || !inZones(targetZones, fqdn):
			rejected = append(rejected, rejectedHost{host: fqdn, reason: reasonOutsideZones})
		default:
			served = append(served, fqdn)
		}
	}
	return served, rejected
}

// toFQDN lowercases host and adds the trailing dot, allocating only when it
// must.
func toFQDN(host string) string {
	if strings.HasSuffix(host, ".") && strings.ToLower(host) == host {
		return host
	}
	return strings.ToLower(strings.TrimSuffix(host, ".")) + "."
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

// rejectionText is the log wording of a rejection reason.
func rejectionText(reason string) string {
	if reason == reasonOutsideZones {
		return "outside the zones its target may answer"
	}
	return "not a valid DNS name"
}
