package kubectlhairpin

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
)

// Dataplane is what implements Services on the nodes: kube-proxy, or Cilium
// replacing it. It is what short-circuits a load balancer's addresses, and
// whether it honours ipMode: Proxy depends on which one and its version.
type Dataplane struct {
	// Cilium is true when Cilium replaces kube-proxy.
	Cilium bool
	// Version is the dataplane's version; nil when unknown.
	Version *version.Version
	// Evidence says what showed it, each naming its object.
	Evidence []string
	// Objects are the objects read.
	Objects []string
	// Unknown says which fact could not be read; "" when all could.
	Unknown string
	// NoVersion says why Version is nil though every read was allowed: no
	// image read names it.
	NoVersion string
}

// The first versions that honour ipMode: Proxy (KEP-1860): kube-proxy's
// LoadBalancerIPMode feature is on by default from 1.30; Cilium reads
// ipMode from 1.17, and 1.18.0 ignores it by mistake.
var (
	kubeProxyIPMode  = version.MustParseGeneric("1.30.0")
	ciliumIPMode     = version.MustParseGeneric("1.17.0")
	ciliumIPModeBug  = version.MustParseGeneric("1.18.0")
	ciliumIPModeFix  = version.MustParseGeneric("1.18.1")
	ciliumIPModeBugs = "cilium#40913, fixed in 1.18.1 by cilium#40915"
)

// Name is who short-circuits, as a load-balancer line says it.
func (d Dataplane) Name() string {
	if d.Cilium {
		return "Cilium (kube-proxy replacement)"
	}
	return "kube-proxy"
}

// String names the dataplane with its version.
func (d Dataplane) String() string {
	v := "of an unknown version"
	if d.Version != nil {
		v = "v" + d.Version.String()
	}
	if d.Cilium {
		return "Cilium " + v + " as kube-proxy replacement"
	}
	return "kube-proxy " + v
}

// ignoresIPMode says why the dataplane short-circuits an address whose
// ipMode is Proxy, or "" when it honours it (or its version is unknown,
// which is taken to be a current one).
func (d Dataplane) ignoresIPMode() string {
	v := d.Version
	switch {
	case v == nil:
		return ""
	case !d.Cilium && v.LessThan(kubeProxyIPMode):
		return fmt.Sprintf("kube-proxy v%s ignores it (the LoadBalancerIPMode feature is on by default from 1.30)", v)
	case d.Cilium && v.LessThan(ciliumIPMode):
		return fmt.Sprintf("Cilium v%s ignores it (Cilium reads ipMode from 1.17)", v)
	case d.Cilium && v.AtLeast(ciliumIPModeBug) && v.LessThan(ciliumIPModeFix):
		return fmt.Sprintf("Cilium v%s ignores it by mistake: %s", v, ciliumIPModeBugs)
	}
	return ""
}

// ipModeCases gives the verdict on ipMode: Proxy of each version the
// dataplane may have, for when its own is unknown.
func (d Dataplane) ipModeCases() string {
	if d.Cilium {
		return "on Cilium 1.17.x and from 1.18.1 ipMode: Proxy is honoured; before 1.17, and on 1.18.0, it is ignored (1.18.0 by mistake: " + ciliumIPModeBugs + ")"
	}
	return "on kube-proxy 1.30 and later ipMode: Proxy is honoured; before 1.30 it is ignored (on 1.29 unless its LoadBalancerIPMode feature gate is on)"
}

// versionHowTo is how to find the dataplane's version by hand.
func (d Dataplane) versionHowTo() string {
	if d.Cilium {
		return "cilium version in an agent pod, or the release notes of the distribution that installed Cilium"
	}
	return "kube-proxy --version on a node"
}

// upgradeHint is how to make the dataplane honour ipMode: Proxy.
func (d Dataplane) upgradeHint() string {
	if d.Cilium {
		return "upgrade Cilium to v1.18.1 or later (or 1.17.x)"
	}
	return "upgrade kube-proxy to v1.30 or later, or turn its LoadBalancerIPMode feature gate on (1.29, with the apiserver's)"
}
