package kubectlhairpin

import (
	"fmt"
	"slices"
	"strings"

	apps "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

// ciliumImages are the last segments of the repositories of Cilium's
// release images: the agent and the operators, generic and per cloud. A
// release tags each of them with its version.
var ciliumImages = []string{"cilium", "operator", "operator-generic", "operator-aws", "operator-azure", "operator-alibabacloud"}

// The operator's Deployment and container, as Cilium's chart names and
// labels them.
const (
	ciliumOperator         = "cilium-operator"
	ciliumAppLabel         = "io.cilium/app"
	ciliumAppOperatorValue = "operator"
)

// ciliumRelease reports whether image is Cilium's own build, so that its
// tag is Cilium's version. The repository decides, not the tag: a
// distribution may ship its own build of the agent tagged with its own
// release (Cozystack's ghcr.io/cozystack/cozystack/cilium:v1.6.0 is
// Cozystack 1.6.0, and Cilium 1.19). Cilium's own repositories are
// cilium/<image> on any registry: quay.io and docker.io, and the mirrors
// and pull-through caches that keep the path (mirror.gcr.io/cilium/cilium,
// a private registry's copy); Rancher's copies are
// rancher/mirrored-cilium-<image>. Both copy the image with its tag.
func ciliumRelease(image string) bool {
	repo, _ := splitImage(image)
	segments := strings.Split(repo, "/")
	if len(segments) < 2 {
		return false
	}
	switch name := segments[len(segments)-1]; segments[len(segments)-2] {
	case "cilium":
		return slices.Contains(ciliumImages, name)
	case "rancher":
		name, ok := strings.CutPrefix(name, "mirrored-cilium-")
		return ok && slices.Contains(ciliumImages, name)
	}
	return false
}

// ciliumImageVersion is the Cilium version that image names, or nil and
// why it names none, to follow "image X".
func ciliumImageVersion(image string) (*version.Version, string) {
	if !ciliumRelease(image) {
		return nil, "is not Cilium's own build"
	}
	v, err := version.ParseGeneric(imageTag(image))
	if err != nil {
		return nil, "has no version tag"
	}
	return v, ""
}

// ciliumVersion reads Cilium's version from the image of its agent, else
// from its operator's in namespace ns (which a distribution that rebuilds
// the agent tends to keep: Cozystack does), and records which image
// showed it, or why none did. agent is nil when DaemonSets could not be
// listed.
func (g *gatherer) ciliumVersion(ns string, agent *apps.DaemonSet, container int) {
	d := &g.f.Dataplane
	var agentImage, agentWhy string
	if agent != nil {
		agentImage = agent.Spec.Template.Spec.Containers[container].Image
		d.Objects = append(d.Objects, "daemonset/"+agent.Namespace+"/"+agent.Name)
		var v *version.Version
		if v, agentWhy = ciliumImageVersion(agentImage); v != nil {
			d.Version = v
			d.Evidence = append(d.Evidence, fmt.Sprintf("DaemonSet %s/%s: image %s", agent.Namespace, agent.Name, agentImage))
			return
		}
	}
	var operatorWhy string
	switch op, c := findCiliumOperator(g.cache.deployments, ns); {
	case op != nil:
		image := op.Spec.Template.Spec.Containers[c].Image
		d.Objects = append(d.Objects, "deployment/"+op.Namespace+"/"+op.Name)
		v, why := ciliumImageVersion(image)
		if v == nil {
			operatorWhy = "the operator image " + image + " " + why
			break
		}
		if agent != nil {
			d.Evidence = append(d.Evidence, fmt.Sprintf("DaemonSet %s/%s: image %s, which %s", agent.Namespace, agent.Name, agentImage, agentWhy))
		}
		d.Evidence = append(d.Evidence, fmt.Sprintf("Deployment %s/%s: image %s", op.Namespace, op.Name, image))
		d.Version = v
		return
	case g.deploymentsDenied:
		operatorWhy = "Deployments could not be listed"
	default:
		operatorWhy = "no " + ciliumOperator + " Deployment was found in " + ns
	}
	if agent == nil {
		// A read was denied: the line asks for the right to make it.
		d.Unknown = "DaemonSets could not be listed, and " + operatorWhy + ", so Cilium's version is unknown"
		if g.deploymentsDenied {
			d.Unknown = "DaemonSets and Deployments could not be listed, so Cilium's version is unknown"
		}
		return
	}
	d.NoVersion = "Cilium's version is unknown (the agent image " + agentImage + " " + agentWhy + ", and " + operatorWhy + ")"
}

// findCiliumOperator returns the operator's Deployment in namespace
// (labelled io.cilium/app=operator, else named cilium-operator), and the
// index of its container named cilium-operator (else the first).
func findCiliumOperator(list []apps.Deployment, namespace string) (*apps.Deployment, int) {
	return findWorkload(list, deploymentParts, workloadQuery{
		namespace: namespace, label: ciliumAppLabel, value: ciliumAppOperatorValue, name: ciliumOperator, container: ciliumOperator,
	})
}
