package kubectlhairpin

import (
	"fmt"
	"slices"
)

// The groups, in the order the report prints them.
const (
	groupCluster     = "cluster"
	groupCoreDNS     = "coredns"
	groupControllers = "controllers"
	groupLB          = "loadbalancers"
	groupTargets     = "targets"
	groupHosts       = "hosts"
	groupDNS         = "dns"
)

var groupOrder = []string{groupCluster, groupCoreDNS, groupControllers, groupLB, groupTargets, groupHosts, groupDNS}

// The check ids. They are stable: `-o json` consumers match on them, and
// docs/troubleshooting.md has a heading (and so an anchor) for each.
const (
	idClusterAccess = "cluster-access"

	idCoreDNSPods       = "coredns-pods"
	idCoreDNSMetrics    = "coredns-metrics"
	idCoreDNSImage      = "coredns-image"
	idCoreDNSActivation = "coredns-activation"
	idCoreDNSKinds      = "coredns-kinds"
	idCoreDNSTargets    = "coredns-targets"

	idControllersFound   = "controllers-found"
	idIngressClassTarget = "ingress-class-target"
	idGatewayTarget      = "gateway-target"

	idDataplane         = "dataplane"
	idLBStatus          = "lb-status"
	idTargetUnnecessary = "target-unnecessary"

	idTargetsFound      = "targets-found"
	idTargetAnnotations = "target-annotations"
	idTargetZones       = "target-zones"
	idTargetAddress     = "target-address"
	idTargetEndpoints   = "target-endpoints"
	idProxyUpstream     = "proxy-upstream"

	idTargetDirectRequiresProxy = "target-direct-requires-proxy"

	idHostsOutsideZones = "hosts-outside-zones"
	idHostsUnselected   = "hosts-unselected"
	idHostsConflicts    = "hosts-conflicts"
	idHostsShadowed     = "hosts-shadowed"

	idNodeLocalDNS = "node-local-dns"
	idManagedDNS   = "managed-dns"
)

// checkGroups maps every id to its group.
var checkGroups = map[string]string{
	idClusterAccess: groupCluster,

	idCoreDNSPods: groupCoreDNS, idCoreDNSMetrics: groupCoreDNS, idCoreDNSImage: groupCoreDNS,
	idCoreDNSActivation: groupCoreDNS, idCoreDNSKinds: groupCoreDNS, idCoreDNSTargets: groupCoreDNS,

	idControllersFound: groupControllers, idIngressClassTarget: groupControllers, idGatewayTarget: groupControllers,

	idDataplane: groupLB, idLBStatus: groupLB, idTargetUnnecessary: groupLB,

	idTargetsFound: groupTargets, idTargetAnnotations: groupTargets, idTargetZones: groupTargets,
	idTargetAddress: groupTargets, idTargetEndpoints: groupTargets, idProxyUpstream: groupTargets,
	idTargetDirectRequiresProxy: groupTargets,

	idHostsOutsideZones: groupHosts, idHostsUnselected: groupHosts, idHostsConflicts: groupHosts, idHostsShadowed: groupHosts,

	idNodeLocalDNS: groupDNS, idManagedDNS: groupDNS,
}

// IDs returns every check id, sorted.
func IDs() []string {
	ids := make([]string, 0, len(checkGroups))
	for id := range checkGroups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// DocsURL is where the ids are explained; each has its anchor there.
const DocsURL = "https://github.com/coredns-hairpin/hairpin/blob/main/docs/troubleshooting.md"

// DocsPage is a page of the docs beside the troubleshooting page.
func DocsPage(path string) string {
	return "https://github.com/coredns-hairpin/hairpin/blob/main/docs/" + path
}

// newCheck returns a check of id; the group follows from the id.
func newCheck(id string, s Status, format string, args ...any) Check {
	return Check{ID: id, Group: checkGroups[id], Status: s, Message: fmt.Sprintf(format, args...), Objects: []string{}}
}

// hint sets the fix, followed by the docs anchor of the check's id.
func (c Check) hint(format string, args ...any) Check {
	c.Hint = fmt.Sprintf(format, args...) + "; see " + DocsURL + "#" + c.ID
	return c
}

// on adds the objects the check is about.
func (c Check) on(objects ...string) Check {
	for _, o := range objects {
		if !slices.Contains(c.Objects, o) {
			c.Objects = append(c.Objects, o)
		}
	}
	return c
}
