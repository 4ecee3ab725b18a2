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

// gatherDataplane finds out who short-circuits load-balancer addresses:
// Cilium when its cilium-config says it replaces kube-proxy, else
// kube-proxy, whose version is its DaemonSet's image tag, or the
// apiserver's when it runs some other way (a static pod, a host service).
func (g *gatherer) gatherDataplane(ctx context.Context) error {
	d := &g.f.Dataplane
	agent, agentContainer := findDaemonSet(g.cache.daemonSets, ciliumName, ciliumAgent)
	if agent != nil || g.workloadsDenied {
		ns := defaultDataplaneNS
		if agent != nil {
			ns = agent.Namespace
		}
		cm, err := g.c.Kube.CoreV1().ConfigMaps(ns).Get(ctx, ciliumConfig, meta.GetOptions{})
		ok, err := g.read(err, "get configmaps/"+ciliumConfig+" in "+ns, "whether Cilium replaces kube-proxy is unknown")
		if err != nil {
			return err
		}
		switch kpr, set := "", false; {
		case ok:
			kpr, set = cm.Data[ciliumKPRKey]
			d.Evidence = append(d.Evidence, fmt.Sprintf("ConfigMap %s/%s: %s: %q", ns, ciliumConfig, ciliumKPRKey, kpr))
			d.Objects = append(d.Objects, "configmap/"+ns+"/"+ciliumConfig)
			d.Cilium = set && (kpr == "true" || kpr == "strict")
		case agent != nil:
			d.Unknown = fmt.Sprintf("Cilium runs (daemonset/%s/%s), but its %s could not be read", agent.Namespace, agent.Name, ciliumConfig)
		}
	}
	if d.Cilium {
		if agent == nil {
			d.Unknown = "Cilium's DaemonSet was not found, so its version is unknown"
			return nil
		}
		d.Version = g.imageVersion(agent, agentContainer)
		return nil
	}

	proxy, proxyContainer := findDaemonSet(g.cache.daemonSets, kubeProxyName, kubeProxyName)
	if proxy != nil {
		if d.Version = g.imageVersion(proxy, proxyContainer); d.Version != nil {
			return nil
		}
	}
	if g.workloadsDenied && d.Unknown == "" {
		d.Unknown = "DaemonSets could not be listed, so kube-proxy's version is taken from the apiserver"
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

// findDaemonSet returns the DaemonSet labelled k8s-app=name (else named
// name), and the index of its container named container (else the first).
func findDaemonSet(list []apps.DaemonSet, name, container string) (*apps.DaemonSet, int) {
	var found *apps.DaemonSet
	for i := range list {
		ds := &list[i]
		if len(ds.Spec.Template.Spec.Containers) == 0 {
			continue
		}
		if ds.Labels[k8sAppLabel] == name {
			found = ds
			break
		}
		if ds.Name == name && found == nil {
			found = ds
		}
	}
	if found == nil {
		return nil, 0
	}
	for i, c := range found.Spec.Template.Spec.Containers {
		if c.Name == container {
			return found, i
		}
	}
	return found, 0
}

// imageTag is the tag of an image reference ("" without one): what follows
// the last ':' after the last '/', before any digest.
func imageTag(image string) string {
	image, _, _ = strings.Cut(image, "@")
	name := image[strings.LastIndex(image, "/")+1:]
	_, tag, _ := strings.Cut(name, ":")
	return tag
}
