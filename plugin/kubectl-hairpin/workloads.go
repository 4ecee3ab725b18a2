package kubectlhairpin

import (
	"strings"

	apps "k8s.io/api/apps/v1"
	core "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// workloadQuery says which workload to find: the first in namespace (""
// for any) labelled label=value, else the first named name; and which of
// its containers: the one named container, else the first.
type workloadQuery struct {
	namespace, label, value, name, container string
}

// findWorkload returns the workload of list that q asks for, and the
// index of its container; parts gives a workload's metadata and
// containers. A workload without containers is never the one.
func findWorkload[T any](list []T, parts func(*T) (*meta.ObjectMeta, []core.Container), q workloadQuery) (*T, int) {
	var found *T
	var containers []core.Container
	for i := range list {
		m, cs := parts(&list[i])
		if len(cs) == 0 || q.namespace != "" && m.Namespace != q.namespace {
			continue
		}
		if q.value != "" && m.Labels[q.label] == q.value {
			found, containers = &list[i], cs
			break
		}
		if m.Name == q.name && found == nil {
			found, containers = &list[i], cs
		}
	}
	if found == nil {
		return nil, 0
	}
	for i, c := range containers {
		if c.Name == q.container {
			return found, i
		}
	}
	return found, 0
}

// findDaemonSet returns the DaemonSet labelled k8s-app=name (else named
// name), and the index of its container named container (else the first).
func findDaemonSet(list []apps.DaemonSet, name, container string) (*apps.DaemonSet, int) {
	return findWorkload(list, daemonSetParts, workloadQuery{label: k8sAppLabel, value: name, name: name, container: container})
}

func daemonSetParts(ds *apps.DaemonSet) (*meta.ObjectMeta, []core.Container) {
	return &ds.ObjectMeta, ds.Spec.Template.Spec.Containers
}

func deploymentParts(d *apps.Deployment) (*meta.ObjectMeta, []core.Container) {
	return &d.ObjectMeta, d.Spec.Template.Spec.Containers
}

// splitImage cuts an image reference into its repository and its tag (""
// without one): the tag follows the last ':' after the last '/', and a
// digest is dropped.
func splitImage(image string) (repo, tag string) {
	image, _, _ = strings.Cut(image, "@")
	if colon := strings.LastIndex(image, ":"); colon > strings.LastIndex(image, "/") {
		return image[:colon], image[colon+1:]
	}
	return image, ""
}

// imageTag is the tag of an image reference ("" without one).
func imageTag(image string) string {
	_, tag := splitImage(image)
	return tag
}
