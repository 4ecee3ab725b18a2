package kubectlhairpin

import (
	"strings"

	apps "k8s.io/api/apps/v1"
	core "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// What shows that the cluster DNS is managed for the user, so that an image
// set on it is put back (docs/install/managed.md, one section each).
var managedMarks = []struct {
	provider, label, value, anchor string
}{
	{"EKS", "eks.amazonaws.com/component", "", "eks"},
	{"AKS", "kubernetes.azure.com/managedby", "aks", "aks"},
	{"an addon manager", "addonmanager.kubernetes.io/mode", "Reconcile", ""}, // the page as a whole
}

// findManagedDNS looks for those marks on the kube-dns Service, its pods and
// the Deployments that run them, and for kube-dns itself (GKE), which is
// not CoreDNS at all.
func findManagedDNS(svc *core.Service, pods []core.Pod, deployments []apps.Deployment) []Managed {
	type marked struct {
		object string
		labels map[string]string
	}
	objs := []marked{{"service/" + svc.Namespace + "/" + svc.Name, svc.Labels}}
	for _, d := range selectedDeployments(svc, deployments) {
		objs = append(objs, marked{"deployment/" + d.Namespace + "/" + d.Name, d.Labels})
	}
	for _, p := range pods {
		objs = append(objs, marked{"pod/" + p.Namespace + "/" + p.Name, p.Labels})
	}

	var out []Managed
	seen := map[string]bool{}
	add := func(m Managed) {
		if !seen[m.Provider] {
			seen[m.Provider] = true
			out = append(out, m)
		}
	}
	for _, mk := range managedMarks {
		for _, o := range objs {
			v, ok := o.labels[mk.label]
			if ok && (mk.value == "" || v == mk.value) {
				add(Managed{Provider: mk.provider, Evidence: "label " + mk.label + "=" + v, Anchor: mk.anchor, Object: o.object})
			}
		}
	}
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			if strings.Contains(c.Image, "k8s-dns-kube-dns") {
				add(Managed{Provider: "GKE", Evidence: "the cluster DNS is kube-dns (" + c.Image + "), not CoreDNS", Anchor: "gke", Object: "pod/" + p.Namespace + "/" + p.Name})
			}
		}
	}
	return out
}

// selectedDeployments are the Deployments of svc's namespace whose Pods
// svc selects.
func selectedDeployments(svc *core.Service, deployments []apps.Deployment) []*apps.Deployment {
	var out []*apps.Deployment
	for i := range deployments {
		d := &deployments[i]
		if d.Namespace == svc.Namespace && d.Spec.Template.Labels != nil && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			out = append(out, d)
		}
	}
	return out
}
