package rules

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Rejected is a host that an object names but that is never answered, and
// why: ReasonOutsideZones or ReasonInvalid.
type Rejected struct {
	Host   string
	Reason string
}

// ClassifyHosts normalises hosts to lowercase FQDNs and splits them into the
// hosts served and the hosts rejected. A host is served only inside both the
// stanza's zones and its target's zones: the stanza bounds the server block,
// the target bounds what one controller's tenants may claim. Empty hosts (a
// rule for every host) name nothing and are dropped.
//
// When every host is served as it is given, hosts itself is returned: the
// common case, where 100,000 Ingresses do not keep their hosts twice. The
// caller never writes to what ClassifyHosts returns.
func ClassifyHosts(hosts []string, stanzaZones, targetZones []string) (served []string, rejected []Rejected) {
	if allServed(hosts, stanzaZones, targetZones) {
		return hosts, nil
	}
	for _, h := range hosts {
		if h == "" {
			continue
		}
		fqdn := ToFQDN(h)
		if slices.Contains(served, fqdn) || slices.ContainsFunc(rejected, func(r Rejected) bool { return r.Host == fqdn }) {
			continue
		}
		switch {
		case !ValidHost(fqdn):
			rejected = append(rejected, Rejected{Host: fqdn, Reason: ReasonInvalid})
		case !InZones(stanzaZones, fqdn) || !InZones(targetZones, fqdn):
			rejected = append(rejected, Rejected{Host: fqdn, Reason: ReasonOutsideZones})
		default:
			served = append(served, fqdn)
		}
	}
	return served, rejected
}

// allServed reports whether hosts are served as they are: normalised, valid,
// inside both zone lists, each once.
func allServed(hosts []string, stanzaZones, targetZones []string) bool {
	for i, h := range hosts {
		if h == "" || ToFQDN(h) != h || !ValidHost(h) || !InZones(stanzaZones, h) || !InZones(targetZones, h) || slices.Contains(hosts[:i], h) {
			return false
		}
	}
	return len(hosts) > 0
}

// RejectionText is the log wording of a rejection reason.
func RejectionText(reason string) string {
	if reason == ReasonOutsideZones {
		return "outside the zones its target may answer"
	}
	return "not a valid DNS name"
}

// ToFQDN lowercases host and adds the trailing dot, allocating only when it
// must.
func ToFQDN(host string) string {
	if strings.HasSuffix(host, ".") && strings.ToLower(host) == host {
		return host
	}
	return strings.ToLower(strings.TrimSuffix(host, ".")) + "."
}

// ValidHost accepts a DNS-1123 subdomain, optionally with one leading "*."
// label, given as an FQDN: what apimachinery's IsDNS1123Subdomain and
// IsWildcardDNS1123Subdomain accept (FuzzValidHost holds them equal), without
// their regular expressions, which were most of the CPU time of a first sync
// of 200,000 hosts.
func ValidHost(fqdn string) bool {
	h := strings.TrimSuffix(fqdn, ".")
	if len(h) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimPrefix(h, "*."), ".") {
		if !isDNS1123Label(label) {
			return false
		}
	}
	return true
}

// isDNS1123Label: lowercase letters, digits and inner hyphens, at least one
// character (the length limit of a label is not part of a subdomain's).
func isDNS1123Label(l string) bool {
	if l == "" || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// appendHost adds host as a lowercase FQDN unless it is empty (a rule for
// every host) or already there.
func appendHost(hosts []string, host string) []string {
	if host == "" {
		return hosts
	}
	fqdn := ToFQDN(host)
	if slices.Contains(hosts, fqdn) {
		return hosts
	}
	return append(hosts, fqdn)
}
