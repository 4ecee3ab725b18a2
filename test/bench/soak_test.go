package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/coredns-hairpin/hairpin/test/dataplane"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/steady"
)

// EnvSoak gates the soak and sets its length (a Go duration): `make soak
// SOAK=30m`.
const EnvSoak = "HAIRPIN_SOAK"

// SoakCommand is how the soak is run.
const SoakCommand = "make soak SOAK=30m   # = HAIRPIN_SOAK=30m HAIRPIN_BIN=$PWD/bin HAIRPIN_HELM=... go test -count=1 -v -run '^TestSoak$' ./test/bench/"

// SoakResults is results.json's soak: what a long steady churn did to
// CoreDNS's and the proxy's footprint, and to the steady client.
type SoakResults struct {
	Date     string  `json:"date"`
	Machine  string  `json:"machine"`
	Command  string  `json:"command"`
	Mode     string  `json:"mode"`
	Minutes  float64 `json:"minutes"`
	Requests int     `json:"requests"`
	// FailedRequests must be 0.
	FailedRequests int `json:"failed_requests"`
	IngressChanges int `json:"ingress_changes"`
	TargetFlaps    int `json:"target_flaps"`
	ProxyRollouts  int `json:"proxy_rollouts"`
	// Per CoreDNS replica (mean) and per proxy Pod (mean): start, end, and
	// the least-squares slope per hour over every sample.
	CoreDNSRSSMB      Trend `json:"coredns_rss_mb"`
	CoreDNSGoroutines Trend `json:"coredns_goroutines"`
	ProxyRSSMB        Trend `json:"proxy_rss_mb"`
	ProxyFDs          Trend `json:"proxy_fds"`
}

// Trend is a figure at the start and the end of the soak, and its slope.
type Trend struct {
	Start   float64 `json:"start"`
	End     float64 `json:"end"`
	PerHour float64 `json:"slope_per_hour"`
	Samples int     `json:"samples"`
}

// previousSoak is the soak of the results.json in this folder, if any: a
// bench run keeps it.
func previousSoak() *SoakResults {
	b, err := os.ReadFile("results.json")
	if err != nil {
		return nil
	}
	var prev struct {
		Soak *SoakResults `json:"soak"`
	}
	if json.Unmarshal(b, &prev) != nil {
		return nil
	}
	return prev.Soak
}

// Churn of the soak, as the issue sets it.
const (
	soakChangeEvery  = 100 * time.Millisecond // 10 Ingress changes/s
	soakFlapEvery    = time.Minute
	soakRolloutEvery = 5 * time.Minute
	soakSampleEvery  = 15 * time.Second
	soakIngresses    = 50 // the churned pool, in the root tenant's class and zone
)

// TestSoak holds steady churn on the nftables dataplane for HAIRPIN_SOAK
// (10 Ingress changes/s, a target flap every minute, a proxy rollout every
// 5 minutes) with the steady client running throughout, and writes the
// footprint trends and the failed requests into results.json's soak. A
// failed request fails it.
func TestSoak(t *testing.T) {
	length, err := time.ParseDuration(os.Getenv(EnvSoak))
	if err != nil || length <= 0 {
		t.Skipf("the soak runs only with %s=DURATION (make soak SOAK=30m)", EnvSoak)
	}
	const mode = "nftables"
	e := dataplane.Start(t, mode, "kubeadm")
	ctx, cancel := context.WithTimeout(t.Context(), length+15*time.Minute)
	defer cancel()
	if out, err := e.Install(ctx, t); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	var hosts []string
	target := map[string]string{}
	for _, ic := range dataplane.Controllers {
		ip, err := e.TargetIP(ctx, ic)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.WaitResolves(ctx, ic.Hosts[0], ip); err != nil {
			t.Fatal(err)
		}
		if _, err := e.WaitCurl(ctx, "http://"+ic.Hosts[0]+"/"); err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, ic.Hosts[0])
		target[ic.Hosts[0]] = ip.String()
	}
	client, err := e.StartSteady(hosts...)
	if err != nil {
		t.Fatal(err)
	}
	res := &SoakResults{Date: time.Now().UTC().Format(time.RFC3339), Machine: machine(), Command: SoakCommand, Mode: mode}
	var coreRSS, coreG, proxyRSS, proxyFDs series
	start := time.Now()
	sample := func(at time.Time) {
		h := at.Sub(start).Hours()
		if rss, g, err := coreDNSFootprint(ctx, e); err == nil {
			coreRSS.add(h, rss)
			coreG.add(h, g)
		} else {
			t.Logf("soak: CoreDNS footprint: %v", err)
		}
		if rss, fds, err := proxyFootprint(ctx, e); err == nil {
			proxyRSS.add(h, rss)
			proxyFDs.add(h, fds)
		} else {
			t.Logf("soak: proxy footprint: %v", err)
		}
	}
	sample(start)
	change := time.NewTicker(soakChangeEvery)
	defer change.Stop()
	flap := time.NewTicker(soakFlapEvery)
	defer flap.Stop()
	rollout := time.NewTicker(soakRolloutEvery)
	defer rollout.Stop()
	samples := time.NewTicker(soakSampleEvery)
	defer samples.Stop()
	deadline := time.After(length)
	ch := newChurn(e)
	flapped := false
loop:
	for {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-deadline:
			break loop
		case <-change.C:
			if err := ch.step(ctx); err != nil {
				t.Fatalf("soak: Ingress change %d: %v", ch.n, err)
			}
			res.IngressChanges++
		case <-flap.C:
			if err := flapTarget(ctx, e, flapped); err != nil {
				t.Fatalf("soak: target flap: %v", err)
			}
			flapped = !flapped
			res.TargetFlaps++
		case <-rollout.C:
			res.ProxyRollouts++
			// helm waits for the new Pods; the churn waits with it, as an
			// operator's pipeline would not, but the client does not.
			if out, err := e.Upgrade(ctx, t, dataplane.Values(), "--set-string", "proxy.podAnnotations.soak="+strconv.Itoa(res.ProxyRollouts)); err != nil {
				t.Fatalf("soak: proxy rollout: %v\n%s", err, out)
			}
		case at := <-samples.C:
			sample(at)
		}
		if !client.Running() {
			rs, err := client.Wait(ctx)
			t.Fatalf("soak: the steady client stopped after %d results: %v", len(rs), err)
		}
	}
	sample(time.Now())
	stopCtx, stopCancel := context.WithTimeout(ctx, 15*time.Second)
	defer stopCancel()
	results, err := client.Stop(stopCtx)
	if err != nil {
		t.Fatal(err)
	}
	tally := steady.Count(results, func(r steady.Result) (bool, bool) {
		if r.Kind == steady.KindDNS {
			return true, !steady.Answered(r, target[r.Host])
		}
		return true, r.Fail != ""
	})
	res.Minutes = round(time.Since(start).Minutes(), 1)
	res.Requests, res.FailedRequests = tally.Requests, tally.Failed
	res.CoreDNSRSSMB, res.CoreDNSGoroutines = coreRSS.trend(), coreG.trend()
	res.ProxyRSSMB, res.ProxyFDs = proxyRSS.trend(), proxyFDs.trend()
	writeSoak(t, res)
	if tally.Failed > 0 {
		t.Errorf("soak: %d of %d requests failed (longest run %s); want 0; first: %+v", tally.Failed, tally.Requests, tally.Window, tally.Samples)
	}
	if err := ch.cleanup(ctx); err != nil {
		t.Error(err)
	}
	if out, err := e.Uninstall(ctx); err != nil {
		t.Errorf("helm uninstall: %v\n%s", err, out)
	}
}

// writeSoak puts res into results.json, keeping everything else.
func writeSoak(t *testing.T, res *SoakResults) {
	t.Helper()
	all := map[string]json.RawMessage{}
	if b, err := os.ReadFile("results.json"); err == nil {
		if err := json.Unmarshal(b, &all); err != nil {
			t.Fatalf("results.json: %v", err)
		}
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	all["soak"] = raw
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("results.json", append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	pretty, _ := json.MarshalIndent(res, "", "  ")
	abs, _ := filepath.Abs("results.json")
	t.Logf("soak: wrote %s:\n%s", abs, pretty)
}

// churn creates, rewrites and deletes Ingresses of the root tenant, one
// change per step: a pool that fills to soakIngresses, then each step
// changes one's host, and every fifth deletes one that the next refills.
type churn struct {
	e    *dataplane.Env
	n    int
	live map[int]bool
}

func newChurn(e *dataplane.Env) *churn { return &churn{e: e, live: map[int]bool{}} }

func (c *churn) step(ctx context.Context) error {
	ic := dataplane.Controllers[0]
	ings := c.e.CP.Clientset.NetworkingV1().Ingresses(ic.Namespace)
	c.n++
	i := c.n % soakIngresses
	name := fmt.Sprintf("soak-%d", i)
	host := fmt.Sprintf("soak-%d-%d.%s", i, c.n, dataplane.Zones[0])
	switch {
	case !c.live[i]:
		c.live[i] = true
		_, err := ings.Create(ctx, soakIngress(name, host, ic.Class), metav1.CreateOptions{})
		return err
	case c.n%5 == 0:
		delete(c.live, i)
		return ings.Delete(ctx, name, metav1.DeleteOptions{})
	default:
		patch := fmt.Sprintf(`{"spec":{"rules":[{"host":%q}]}}`, host)
		_, err := ings.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
}

func (c *churn) cleanup(ctx context.Context) error {
	ings := c.e.CP.Clientset.NetworkingV1().Ingresses(dataplane.Controllers[0].Namespace)
	for i := range c.live {
		if err := ings.Delete(ctx, fmt.Sprintf("soak-%d", i), metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("soak: delete soak-%d: %w", i, err)
		}
	}
	return nil
}

func soakIngress(name, host, class string) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To(class),
			Rules:            []networkingv1.IngressRule{{Host: host}},
		},
	}
}

// flapTarget adds, or removes, a third target Service that no steady host
// goes to: every flap makes the plugin reselect every object's target.
func flapTarget(ctx context.Context, e *dataplane.Env, remove bool) error {
	svcs := e.CP.Clientset.CoreV1().Services(dataplane.TargetNamespace)
	if remove {
		return svcs.Delete(ctx, "soak-flap", metav1.DeleteOptions{})
	}
	_, err := svcs.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "soak-flap",
			Labels:      map[string]string{"hairpin.coredns-hairpin.io/target": "soak-flap"},
			Annotations: map[string]string{"hairpin.coredns-hairpin.io/zones": "flap.example.net", "hairpin.coredns-hairpin.io/ingress-classes": "soak-flap"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{})
	return err
}

// coreDNSFootprint is the mean RSS (MiB, /proc) and goroutines (its
// go_goroutines metric) of the kube-dns replicas.
func coreDNSFootprint(ctx context.Context, e *dataplane.Env) (rss, goroutines float64, err error) {
	pods, err := e.CP.Clientset.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil {
		return 0, 0, err
	}
	n := 0.0
	for _, p := range pods.Items {
		pid, ok := e.Nodes[0].ContainerPID(p.Namespace, p.Name, "coredns")
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		r, err := procRSSMB(pid)
		if err != nil {
			return 0, 0, err
		}
		g, err := goroutinesOf(ctx, e, p.Status.PodIP)
		if err != nil {
			return 0, 0, err
		}
		rss, goroutines, n = rss+r, goroutines+g, n+1
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("no running kube-dns pod")
	}
	return rss / n, goroutines / n, nil
}

// goroutinesOf reads go_goroutines from CoreDNS's metrics at ip:9153,
// from the node as Prometheus would.
func goroutinesOf(ctx context.Context, e *dataplane.Env, ip string) (float64, error) {
	addr := netip.MustParseAddr(ip)
	resp, err := e.HTTPFromNode().Get("http://" + netip.AddrPortFrom(addr, 9153).String() + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	samples, err := harness.ParseMetrics(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, s := range samples {
		if s.Name == "go_goroutines" {
			return s.Value, nil
		}
	}
	return 0, fmt.Errorf("%s: no go_goroutines", ip)
}

// proxyFootprint is the mean RSS (MiB) and open fds of the proxy Pods that
// are not terminating.
func proxyFootprint(ctx context.Context, e *dataplane.Env) (rss, fds float64, err error) {
	pods, err := e.ProxyPods(ctx)
	if err != nil {
		return 0, 0, err
	}
	n := 0.0
	for _, name := range pods {
		pid, ok := e.Nodes[0].ContainerPID(dataplane.TargetNamespace, name, "hairpin-proxy")
		if !ok {
			continue
		}
		r, err := procRSSMB(pid)
		if err != nil {
			return 0, 0, err
		}
		entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			return 0, 0, err
		}
		rss, fds, n = rss+r, fds+float64(len(entries)), n+1
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("no running proxy pod")
	}
	return rss / n, fds / n, nil
}

// procRSSMB is VmRSS of /proc/PID/status, in MiB.
func procRSSMB(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// series is samples of one figure over hours.
type series struct{ x, y []float64 }

func (s *series) add(hours, v float64) { s.x, s.y = append(s.x, hours), append(s.y, v) }

// trend is the first and last sample and the least-squares slope per hour.
func (s *series) trend() Trend {
	n := len(s.x)
	if n == 0 {
		return Trend{}
	}
	t := Trend{Start: round(s.y[0], 2), End: round(s.y[n-1], 2), Samples: n}
	var mx, my float64
	for i := range s.x {
		mx, my = mx+s.x[i], my+s.y[i]
	}
	mx, my = mx/float64(n), my/float64(n)
	var num, den float64
	for i := range s.x {
		num += (s.x[i] - mx) * (s.y[i] - my)
		den += (s.x[i] - mx) * (s.x[i] - mx)
	}
	if den > 0 {
		t.PerHour = round(num/den, 2)
	}
	return t
}
