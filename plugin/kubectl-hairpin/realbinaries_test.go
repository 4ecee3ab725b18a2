package kubectlhairpin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// TestRealBinaries reads the metrics of our real CoreDNS (image-only
// activation, against the same kube-apiserver) and of our real
// hairpin-proxy (three routes to PROXY-protocol upstreams), through the
// apiserver's pod proxy: with everything up the report is clean; when an
// upstream goes away its route fails; when a target loses its zones,
// CoreDNS's own count of disabled targets fails too.
func TestRealBinaries(t *testing.T) {
	corednsBin := harness.RequireBinary(t, "coredns")
	proxyBin := harness.RequireBinary(t, "hairpin-proxy")
	e := newEnv(t)
	c := healthyCluster()
	c.metrics = map[string]string{} // the real processes serve them
	e.apply(t, c)
	dir := t.TempDir()

	// CoreDNS with kubeadm's kubernetes block and no hairpin line: our
	// build adds it, discovering the targets in hairpin-system.
	dnsAddr, metricsAddr := harness.FreeAddr(t, "127.0.0.1"), harness.FreeAddr(t, "127.0.0.1")
	corefile := harness.WriteFile(t, dir, "Corefile", fmt.Sprintf(`.:%d {
    bind 127.0.0.1
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        fallthrough in-addr.arpa ip6.arpa
    }
    prometheus %s
}
`, harness.PortOf(t, dnsAddr), e.cp.Kubeconfig, metricsAddr))
	cmd := exec.Command(corednsBin, "-conf", corefile)
	// Out of cluster: the plugins must not take the in-cluster config.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "KUBERNETES_SERVICE_HOST=") })
	coredns := harness.StartCmd(t, "coredns", cmd)

	// The proxy, its routes named as the chart names them.
	health := harness.FreeAddr(t, "127.0.0.1")
	args := []string{"--health-addr", health, "--ready-interval", "200ms", "--lameduck", "0s", "--drain-timeout", "1s"}
	upstreams := map[string]*harness.Upstream{}
	for _, route := range []string{"ingress-nginx-http", "ingress-nginx-https", "tenant-gw-http"} {
		upstreams[route] = harness.StartEchoUpstream(t, "127.0.0.1")
		args = append(args, "--route", fmt.Sprintf("%s=%s,name=%s", harness.FreeAddr(t, "127.0.0.1"), upstreams[route].Addr(), route))
	}
	proxy := harness.StartProcess(t, "hairpin-proxy", proxyBin, args...)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// A target serves once its Service has a ready endpoint; envtest runs
	// no EndpointSlice controller, so the test writes what it would.
	if err := harness.ServeEndpointsOf(ctx, e.cp.Clientset, "hairpin-system", rules.TargetLabel); err != nil {
		t.Fatal(err)
	}
	coredns.RequireReady(ctx, time.Minute, metricIs("http://"+metricsAddr+"/metrics", metricTargets, "state", "serving", 2))
	coredns.RequireReady(ctx, time.Minute, everyKindSynced("http://"+metricsAddr+"/metrics"))
	proxy.RequireReady(ctx, time.Minute, harness.HTTPProbe("http://"+health+"/readyz"))
	// Both CoreDNS pods are this one process, both proxy pods that one.
	for _, ip := range []string{corednsA, corednsB} {
		e.pn.Route(ip+":9153", metricsAddr)
	}
	for _, ip := range []string{proxyA, proxyB} {
		e.pn.Route(ip+":9090", health)
	}
	t.Cleanup(func() {
		for _, a := range []string{corednsA + ":9153", corednsB + ":9153", proxyA + ":9090", proxyB + ":9090"} {
			e.pn.Unroute(a)
		}
	})

	r := e.run(t, e.cp.Config)
	if r.Failed() || r.Count(Warn) > 0 {
		t.Fatalf("with the real CoreDNS and proxy up, the report is not clean:\n%s", table(t, r))
	}

	t.Run("UpstreamDown", func(t *testing.T) {
		upstreams["tenant-gw-http"].Close()
		if err := harness.Poll(ctx, metricIs("http://"+health+"/metrics", metricUpstreamUp, "route", "tenant-gw-http", 0)); err != nil {
			t.Fatal(err)
		}
		r := e.run(t, e.cp.Config)
		want := "route tenant-gw-http of target hairpin-system/tenant-gw: the proxy cannot reach"
		if !hasCheck(r, idProxyUpstream, Fail, want) {
			t.Fatalf("no failing %s check %q:\n%s", idProxyUpstream, want, table(t, r))
		}
	})

	t.Run("TargetLosesItsZones", func(t *testing.T) {
		svc, err := e.cp.Clientset.CoreV1().Services("hairpin-system").Get(ctx, "ingress-nginx", meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		delete(svc.Annotations, rules.ZonesAnnotation)
		if _, err := e.cp.Clientset.CoreV1().Services("hairpin-system").Update(ctx, svc, meta.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := harness.Poll(ctx, metricIs("http://"+metricsAddr+"/metrics", metricTargets, "state", "disabled", 1)); err != nil {
			t.Fatal(err)
		}
		r := e.run(t, e.cp.Config)
		for _, want := range []struct {
			id, text string
		}{
			{idCoreDNSTargets, "has 1 disabled target"},
			{idTargetZones, "target hairpin-system/ingress-nginx has no zones"},
			{idIngressClassTarget, "hairpin-system/ingress-nginx would, but is disabled"},
		} {
			if !hasCheck(r, want.id, Fail, want.text) {
				t.Errorf("no failing %s check %q", want.id, want.text)
			}
		}
		if t.Failed() {
			t.Logf("report:\n%s", table(t, r))
		}
	})
}

// metricIs waits for the gauge name with label=value to read want.
func metricIs(url, name, label, value string, want float64) harness.Probe {
	return harness.MetricsProbe(url, harness.MetricWant{Name: name, Labels: map[string]string{label: value}, Value: want})
}

// everyKindSynced waits until each kind hairpin watches here (Gateway API
// installed, a target selecting a Gateway) has listed.
func everyKindSynced(url string) harness.Probe {
	var want []harness.MetricWant
	for _, kind := range []string{"ingress", "ingressclass", "service", "gatewayapi", "gateway", "httproute", "grpcroute", "tlsroute"} {
		want = append(want, harness.MetricWant{Name: metricKindSynced, Labels: map[string]string{"kind": kind}, Value: 1})
	}
	return harness.MetricsProbe(url, want...)
}

func hasCheck(r Report, id string, s Status, text string) bool {
	return slices.ContainsFunc(r.Checks, func(c Check) bool {
		return c.ID == id && c.Status == s && strings.Contains(c.Message, text)
	})
}
