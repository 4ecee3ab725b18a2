package kubectlhairpin

import (
	"context"
	"slices"
	"strings"

	core "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// kubeDNS is the Service name every distribution gives the cluster DNS.
const kubeDNS = "kube-dns"

// gatherCoreDNS reads the kube-dns Service, the pods it selects and their
// metrics, and what says that a cloud manages them.
func (g *gatherer) gatherCoreDNS(ctx context.Context) error {
	ns := g.f.Options.CoreDNSNamespace
	svc, err := g.c.Kube.CoreV1().Services(ns).Get(ctx, kubeDNS, meta.GetOptions{})
	g.f.KubeDNSRead = err == nil || apierrors.IsNotFound(err)
	if ok, err := g.read(err, "get services/"+kubeDNS+" in "+ns, "CoreDNS is not checked"); !ok {
		return err
	}
	g.f.KubeDNS = svc
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	pods, err := g.c.Kube.CoreV1().Pods(ns).List(ctx, meta.ListOptions{LabelSelector: sel.String()})
	if ok, err := g.read(err, "list pods in "+ns, "CoreDNS's pods and metrics are not checked"); !ok {
		return err
	}
	g.f.CoreDNSPodsRead = true
	slices.SortFunc(pods.Items, func(a, b core.Pod) int { return strings.Compare(a.Name, b.Name) })
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.Phase != core.PodRunning {
			g.f.CoreDNS = append(g.f.CoreDNS, PodFacts{Pod: pod, Err: errNotRunning(pod)})
			continue
		}
		g.f.CoreDNS = append(g.f.CoreDNS, g.scrape(ctx, pod, defaultCoreDNSMetricsPort))
	}
	g.f.ManagedDNS = findManagedDNS(svc, pods.Items, g.cache.deployments)
	for _, d := range selectedDeployments(svc, g.cache.deployments) {
		g.f.CoreDNSDeployments = append(g.f.CoreDNSDeployments, "deployment/"+d.Namespace+"/"+d.Name)
	}
	return nil
}

// notRunning is the scrape error of a pod that is not running.
type notRunning struct{ phase core.PodPhase }

func (e notRunning) Error() string { return "the pod is " + string(e.phase) + ", not Running" }

func errNotRunning(pod *core.Pod) error { return notRunning{phase: pod.Status.Phase} }
