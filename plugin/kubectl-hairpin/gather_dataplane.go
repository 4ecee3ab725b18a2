package kubectlhairpin

import (
	"context"
	"fmt"
	"strings"

	apps "k8s.io/api/apps/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

// What Cilium's chart installs: the agent's DaemonSet (label k8s-app=cilium,
// container cilium-agent) and its settings, the ConfigMap cilium-config in
// the same namespace, whose kube-proxy-replacement says whether it replaces
// kube-proxy ("true"; "strict" before 1.14).
const (
	ciliumName         = "cilium"
	ciliumAgent        = "cilium-agent"
	ciliumConfig       = "cilium-config"
	ciliumKPRKey       = "kube-proxy-replacement"
	kubeProxyName      = "kube-proxy"
	k8sAppLabel        = "k8s-app"
	defaultDataplaneNS = "kube-system"
)

// ciliumNamespaces are where cilium-config is looked for when DaemonSets
// cannot be listed to find the agent's: the chart's default, and
// Cozystack's, whose cilium package installs into cozy-cilium. A get of
// known names needs no right to list ConfigMaps everywhere.
var ciliumNamespaces = []string{defaultDataplaneNS, "cozy-cilium"}

// gatherDataplane finds out who short-circuits load-balancer addresses:
// Cilium when its cilium-config says it replaces kube-proxy, of the
// version its own images name (cilium_version.go), else kube-proxy, whose
// version is its DaemonSet's image tag, or the apiserver's when it runs
// some other way (a static pod, a host service).
func (g *gatherer) gatherDataplane(ctx context.Context) error {
	d := &g.f.Dataplane
	agent, agentContainer := findDaemonSet(g.cache.daemonSets, ciliumName, ciliumAgent)
	ns, err := g.readCiliumConfig(ctx, agent)
	if err != nil {
		return err
	}
	if d.Cilium {
		g.ciliumVersion(ns, agent, agentContainer)
		return nil
	}

	proxy, proxyContainer := findDaemonSet(g.cache.daemonSets, kubeProxyName, kubeProxyName)
	if proxy != nil {
		if d.Version = g.imageVersion(proxy, proxyContainer); d.Version != nil {
			return nil
		}
	}
	if g.daemonSetsDenied && d.Unknown == "" {
		d.Unknown = "DaemonSets could not be listed, so kube-proxy's version is taken from the apiserver"
		if ns == "" {
			d.Unknown = "DaemonSets could not be listed and no " + ciliumConfig + " could be read in " + strings.Join(ciliumNamespaces, " or ") +
				", so whether Cilium replaces kube-proxy is unknown: kube-proxy is assumed, of the apiserver's version"
		}
	}
	info, err := g.c.Kube.Discovery().ServerVersion()
	if ok, err := g.read(err, "get the apiserver's /version", "kube-proxy's version is unknown"); !ok {
		return err
	}
	if d.Version, err = version.ParseGeneric(info.GitVersion); err == nil {
		why := "the apiserver's version " + info.GitVersion
		if proxy == nil {
			why = "no kube-proxy DaemonSet: " + why
		}
		d.Evidence = append(d.Evidence, why)
	}
	return nil
}

// readCiliumConfig reads cilium-config beside the agent, or, when
// DaemonSets could not be listed, in ciliumNamespaces; it returns the
// namespace it was read in, "" when none.
func (g *gatherer) readCiliumConfig(ctx context.Context, agent *apps.DaemonSet) (string, error) {
	d := &g.f.Dataplane
	namespaces := ciliumNamespaces
	switch {
	case agent != nil:
		namespaces = []string{agent.Namespace}
	case !g.daemonSetsDenied:
		return "", nil
	}
	for _, ns := range namespaces {
		cm, err := g.c.Kube.CoreV1().ConfigMaps(ns).Get(ctx, ciliumConfig, meta.GetOptions{})
		ok, err := g.read(err, "get configmaps/"+ciliumConfig+" in "+ns, "whether Cilium replaces kube-proxy is unknown")
		if err != nil {
			return "", err
		}
		if !ok {
			continue
		}
		kpr, set := cm.Data[ciliumKPRKey]
		d.Evidence = append(d.Evidence, fmt.Sprintf("ConfigMap %s/%s: %s: %q", ns, ciliumConfig, ciliumKPRKey, kpr))
		d.Objects = append(d.Objects, "configmap/"+ns+"/"+ciliumConfig)
		d.Cilium = set && (kpr == "true" || kpr == "strict")
		return ns, nil
	}
	if agent != nil {
		d.Unknown = fmt.Sprintf("Cilium runs (daemonset/%s/%s), but its %s could not be read", agent.Namespace, agent.Name, ciliumConfig)
	}
	return "", nil
}

// imageVersion is the version in the tag of a DaemonSet's container image,
// recorded as evidence; nil when the tag is not a version.
func (g *gatherer) imageVersion(ds *apps.DaemonSet, container int) *version.Version {
	d := &g.f.Dataplane
	image := ds.Spec.Template.Spec.Containers[container].Image
	d.Evidence = append(d.Evidence, fmt.Sprintf("DaemonSet %s/%s: image %s", ds.Namespace, ds.Name, image))
	d.Objects = append(d.Objects, "daemonset/"+ds.Namespace+"/"+ds.Name)
	v, err := version.ParseGeneric(imageTag(image))
	if err != nil {
		return nil
	}
	return v
}
