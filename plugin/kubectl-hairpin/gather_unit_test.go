package kubectlhairpin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	core "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
)

// fakeMetrics stands in for the pod proxy in unit tests: it records what
// was scraped and answers from a table.
type fakeMetrics struct {
	scraped []string
	answers map[string]string // pod name -> exposition text
}

func (f *fakeMetrics) Scrape(_ context.Context, pod *core.Pod, port int32) (Samples, error) {
	f.scraped = append(f.scraped, fmt.Sprintf("%s:%d", pod.Name, port))
	text, ok := f.answers[pod.Name]
	if !ok {
		return nil, errors.New("connection refused")
	}
	return ParseMetrics(strings.NewReader(text))
}

// TestGatherScrapesRunningPodsOnTheirMetricsPort: a running CoreDNS pod is
// scraped on its port named metrics; a pending one and one without an IP
// are not, and say why.
func TestGatherScrapesRunningPodsOnTheirMetricsPort(t *testing.T) {
	labels := map[string]string{"k8s-app": "kube-dns"}
	running := pod("kube-system", "coredns-a", corednsA, labels, "ghcr.io/coredns-hairpin/coredns:v0.1.0", 9253, nil)
	pending := pod("kube-system", "coredns-b", "", labels, "ghcr.io/coredns-hairpin/coredns:v0.1.0", 9153, nil)
	pending.Status.Phase = core.PodPending
	noIP := pod("kube-system", "coredns-c", "", labels, "ghcr.io/coredns-hairpin/coredns:v0.1.0", 9153, nil)
	metrics := &fakeMetrics{answers: map[string]string{"coredns-a": fixture("coredns.txt")}}
	c := Clients{
		Kube:    kubefake.NewClientset(service("kube-system", "kube-dns", labels, "", port("dns", 53, 53)), running, pending, noIP),
		Gateway: gwfake.NewClientset(),
		Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()),
		Metrics: metrics,
	}
	f, err := Gather(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"coredns-a:9253"}; !slices.Equal(metrics.scraped, want) {
		t.Errorf("scraped %v; want %v", metrics.scraped, want)
	}
	errs := map[string]error{}
	for _, p := range f.CoreDNS {
		errs[p.Pod.Name] = p.Err
	}
	if errs["coredns-a"] != nil || !errors.As(errs["coredns-b"], new(notRunning)) || !errors.Is(errs["coredns-c"], errNoPodIP) {
		t.Errorf("scrape errors %v; want none for a, not running for b, no IP for c", errs)
	}
	if f.Options.TargetsNamespace != DefaultTargetsNamespace || f.Options.CoreDNSNamespace != DefaultCoreDNSNamespace {
		t.Errorf("options %+v lack the defaults", f.Options)
	}
}
