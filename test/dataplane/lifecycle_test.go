package dataplane_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/coredns-hairpin/hairpin/test/dataplane"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
	"github.com/coredns-hairpin/hairpin/test/harness/steady"
)

// lifecycleModes are the dataplanes the lifecycle test runs in: each of
// dataplane.FullModes (one per family), but a dataplane whose UDP flows
// follow a gone backend (cluster.Capabilities) only when
// HAIRPIN_DATAPLANES names it. One goal cannot hold there, for a reason
// outside the product: the kube-dns rollouts (the adoption's and
// coredns-rollout's) time out a few DNS queries (2 and 4 of about 2,000 in
// a run). Each is sent in the moment between an old CoreDNS Pod's network
// going (its CNI DEL) and cilium-agent dropping its backend (the Pod's
// deletion, 0.1 to 0.4 s later). With socket load balancing limited to the
// node's own namespace, the client Pod's queries are balanced per packet,
// and Cilium keeps a flow whose conntrack entry names a terminating backend
// on that backend (bpf/lib/lb.h, lb4_local: only a new TCP connection is
// moved); a query whose source port reuses such an entry within its 60 s
// goes to the Pod that is gone. kube-proxy deletes the UDP conntrack
// entries of an endpoint that stops serving, so the nftables mode loses
// none; with socket load balancing in the Pods, as Cilium defaults to, the
// backend is chosen at connect().
var lifecycleModes = slices.DeleteFunc(slices.Clone(dataplane.FullModes), func(mode string) bool {
	dp, err := cluster.DataplaneNamed(mode)
	if err != nil {
		return true
	}
	chosen, _ := cluster.DataplanesChosen()
	return dp.Capabilities().UDPFlowsFollowGoneBackends && !chosen
})

// TestLifecycleLosesNoRequest counts what a client sees through the moments
// between steady states: the adoption of our CoreDNS image, the install,
// rollouts of the proxy and of kube-dns, a change of targets, a proxy crash,
// an apiserver outage and the uninstall. A steady client asks for and
// requests the controllers' hosts from the client Pod the whole time; each
// operation prints `lifecycle: OP requests=N failed=M window_ms=W` and fails
// the test when it misses its goal.
func TestLifecycleLosesNoRequest(t *testing.T) {
	dataplane.EachMode(t, lifecycleModes, lifecycle)
}

// Goals of the issue.
const (
	answerWithin     = time.Second // install and uninstall: every replica's answer flips
	outage           = 30 * time.Second
	changeAfterOwner = 5 * time.Second // an Ingress written after the outage is answered within
	bulkSize         = 64 << 20
	// bulkRate keeps the download going (64 s at most) until every old
	// proxy Pod of the rollout is terminating; then it is hurried, to end
	// within the lame duck plus drain (5 s + 25 s) of the first.
	bulkRate  = 1 << 20
	lameDuck  = 5 * time.Second  // the chart's proxy.lameduck
	lameDrain = 30 * time.Second // plus proxy.drainTimeout
	settle    = 3 * time.Second  // after each operation, before the next
)

// opLog is one operation: when it began, which results count for it and
// which of those failed, and goals missed that the tally cannot show.
type opLog struct {
	name   string
	from   time.Time
	judge  steady.Judge
	missed []string
	// allowed is how many failures the goal allows, given the tally.
	allowed func(steady.Tally, []steady.Result) int
	// note says more of the operation's results, after its line.
	note func(rs []steady.Result) string
}

type lifecycleRun struct {
	// t is the test the operations fail: the story's, or the step's that
	// runs one.
	t      *testing.T
	mode   string
	e      *dataplane.Env
	ctx    context.Context
	client *steady.Client
	// controllers are the ingress controllers, whose first hosts the
	// clients ask for; targets name the chart's target Services in front
	// of them, which installChart installs.
	controllers  []cluster.IngressController
	targets      []string
	installChart func(ctx context.Context, t testing.TB) (string, error)
	stopped      bool
	// keepAlive is the second steady client, on keep-alive connections:
	// held to the same goals, and its retries reported.
	keepAlive *steady.Client
	hosts     []string
	public    map[string]string // host: the controller's LoadBalancer IP
	target    map[string]string // host: its target's ClusterIP, once installed
	ops       []*opLog
}

func lifecycle(t *testing.T, mode string, e *dataplane.Env) {
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	root, tenant := dataplane.Controllers[0], dataplane.Controllers[1]
	var targets []string
	for _, tg := range dataplane.DefaultTargets() {
		targets = append(targets, tg.Name)
	}
	r := newLifecycleRun(ctx, t, mode, e, dataplane.Controllers, targets, e.Install)
	r.onStockCoreDNS()
	bulkSum, err := e.BulkFile(ctx, root, "64m", bulkSize)
	if err != nil {
		t.Fatal(err)
	}
	r.startClients()
	// Each operation's lines, also when one could not finish.
	defer r.stop(start)

	r.adoption(e.CoreDNSImage())
	r.install()
	r.proxyRollout(root.Hosts[0], bulkSum)
	r.targetChange(root.Hosts[0], tenant.Hosts[0])
	r.coreDNSRollout()
	r.proxyCrash()
	r.apiserverOutage(root)
	r.uninstall()

}

// newLifecycleRun is a run of operations on e's controllers, the chart's
// targets and installChart, which installs them.
func newLifecycleRun(ctx context.Context, t *testing.T, mode string, e *dataplane.Env, controllers []cluster.IngressController, targets []string,
	installChart func(ctx context.Context, t testing.TB) (string, error)) *lifecycleRun {
	r := &lifecycleRun{t: t, mode: mode, e: e, ctx: ctx, controllers: controllers, targets: targets, installChart: installChart,
		public: map[string]string{}, target: map[string]string{}}
	for _, ic := range controllers {
		r.hosts = append(r.hosts, ic.Hosts[0])
		r.public[ic.Hosts[0]] = ic.LBIP.String()
	}
	return r
}

// onStockCoreDNS puts kube-dns back on stock CoreDNS, before an adoption,
// and leaves it on our image when r.t ends, whatever happens: a cluster
// may be shared.
func (r *lifecycleRun) onStockCoreDNS() {
	t, e := r.t, r.e
	r.must(e.UseStockCoreDNS(r.ctx), "stock CoreDNS")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if img, err := e.CoreDNSImageNow(ctx); err == nil && img == e.CoreDNSImage() {
			return
		}
		if err := e.SetCoreDNSImage(ctx, e.CoreDNSImage()); err != nil {
			t.Errorf("leave kube-dns on our image: %v", err)
		}
	})
	r.must(e.SetCoreDNSImage(r.ctx, dataplane.StockCoreDNSImage()), "kube-dns on stock CoreDNS")
	for _, h := range r.hosts {
		r.must(e.WaitResolves(r.ctx, h, netip.MustParseAddr(r.public[h])), "stock CoreDNS")
	}
}

// startClients starts the steady clients, one per connection style.
func (r *lifecycleRun) startClients() {
	var err error
	r.client, err = r.e.StartSteady(r.hosts...)
	r.must(err, "the steady client")
	r.keepAlive, err = r.e.StartKeepAlive(r.hosts...)
	r.must(err, "the keep-alive steady client")
}

// stop stops the clients, once, prints each operation's lines and fails
// r.t for each goal missed.
func (r *lifecycleRun) stop(start time.Time) {
	if r.stopped || r.client == nil {
		return
	}
	r.stopAndJudge()
	r.t.Logf("lifecycle: %s took %s", r.mode, time.Since(start).Round(time.Second))
}

// stopAndJudge stops both clients, prints each operation's lines for
// each, fails r.t for each goal missed, and returns the first client's
// results.
func (r *lifecycleRun) stopAndJudge() []steady.Result {
	r.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	end := time.Now()
	results, err := r.client.Stop(ctx)
	if err != nil {
		r.t.Error(err)
	}
	kept, err := r.keepAlive.Stop(ctx)
	if err != nil {
		r.t.Error(err)
	}
	r.report("", results, end)
	r.report(" keepalive", kept, end)
	r.reportMissed()
	return results
}

// begin starts an operation.
func (r *lifecycleRun) begin(name string, judge steady.Judge) *opLog {
	op := &opLog{name: name, from: time.Now(), judge: judge}
	r.ops = append(r.ops, op)
	return op
}

// must fails the test at once: the story cannot go on.
func (r *lifecycleRun) must(err error, what string) {
	r.t.Helper()
	if err != nil {
		r.t.Fatalf("%s: %v", what, err)
	}
}

// dnsWant is a judge of DNS results only, against want(host).
func dnsWant(want func(r steady.Result) (string, bool)) steady.Judge {
	return func(res steady.Result) (bool, bool) {
		if res.Kind != steady.KindDNS {
			return false, false
		}
		w, counts := want(res)
		return counts, !steady.Answered(res, w)
	}
}

// servedJudge counts DNS (want: the host's target) and HTTP for hosts.
func (r *lifecycleRun) servedJudge(hosts ...string) steady.Judge {
	target := maps.Clone(r.target)
	only := map[string]bool{}
	for _, h := range hosts {
		only[h] = true
	}
	return func(res steady.Result) (bool, bool) {
		if len(only) > 0 && !only[res.Host] {
			return false, false
		}
		if res.Kind == steady.KindDNS {
			return true, !steady.Answered(res, target[res.Host])
		}
		return true, res.Fail != ""
	}
}

// adoption: kube-dns goes from stock CoreDNS to our image as the docs say,
// with `kubectl set image`, or as a distribution renders its own values.
// No query fails, and every answer stays public: no chart, no target.
func (r *lifecycleRun) adoption(image string) {
	public := maps.Clone(r.public)
	r.begin("adoption", dnsWant(func(res steady.Result) (string, bool) { return public[res.Host], true }))
	r.must(r.e.SetCoreDNSImage(r.ctx, image), "kube-dns on our CoreDNS "+image)
	time.Sleep(settle)
}

// install: helm install. A target takes its hosts once its proxy is ready:
// every replica answers the hairpin address within 1 s of the event after
// which every target's EndpointSlice has a ready endpoint (what the plugin
// and the dataplane watch), and no request fails once the dataplane has
// programmed those endpoints. Before, a host has no working path: its
// controller closes the public address's connections without a PROXY
// header.
func (r *lifecycleRun) install() {
	cs := r.e.CP.Clientset
	crb := watchFirst(r.ctx, r.t, func(ctx context.Context) (watch.Interface, error) {
		return cs.RbacV1().ClusterRoleBindings().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=hairpin-coredns"})
	}, func(ev watch.Event) bool { return ev.Type == watch.Added })
	ready := watchFirst(r.ctx, r.t, func(ctx context.Context) (watch.Interface, error) {
		return cs.DiscoveryV1().EndpointSlices(dataplane.TargetNamespace).Watch(ctx, metav1.ListOptions{})
	}, allTargetsReady(r.targets))
	// On Cilium, the endpoints are ready for a client once the agent has
	// made them active backends of the targets' ClusterIPs; watched from
	// before the install, since nothing records when that happened.
	var programmed *firstEvent
	if r.e.Capabilities().Frontends {
		programmed = pollFirst(r.ctx, 10*time.Millisecond, ciliumServes(r.e, r.targets))
	}
	op := r.begin("install", nil)
	out, err := r.installChart(r.ctx, r.t)
	r.must(err, "helm install: "+out)
	for _, ic := range r.controllers {
		ip, err := r.e.TargetIP(r.ctx, ic)
		r.must(err, "target IP")
		r.target[ic.Hosts[0]] = ip.String()
	}
	// With kube-proxy, they are once a connection through every target's
	// ClusterIP reaches a proxy Pod. Its last sync's time cannot tell: a
	// sync that ends after the endpoints became ready may have begun
	// before, and the client's requests timed out for the second until
	// the next one (53 of them on nftables).
	if programmed == nil {
		programmed = pollFirst(r.ctx, 10*time.Millisecond, kubeProxyServes(r.e, slices.Collect(maps.Values(r.target))))
	}
	crbAt, readyAt := crb.wait(r.t, "the ClusterRoleBinding hairpin-coredns"), ready.wait(r.t, "ready endpoints for every target")
	syncedAt := programmed.wait(r.t, "the dataplane's path to every target's proxy")
	r.t.Logf("install: after the install began, the ClusterRoleBinding was ADDED at %s, every target had a ready endpoint at %s, the dataplane had it at %s",
		crbAt.Sub(op.from).Round(time.Millisecond), readyAt.Sub(op.from).Round(time.Millisecond), syncedAt.Sub(op.from).Round(time.Millisecond))
	public, target := maps.Clone(r.public), maps.Clone(r.target)
	op.judge = func(res steady.Result) (bool, bool) {
		if res.Kind == steady.KindDNS {
			if res.At.Before(readyAt.Add(answerWithin)) {
				return true, !steady.Answered(res, public[res.Host]) && !steady.Answered(res, target[res.Host])
			}
			return true, !steady.Answered(res, target[res.Host])
		}
		return !res.At.Before(syncedAt), res.Fail != ""
	}
	r.waitServed()
}

// waitServed waits until every host resolves to its target at every
// replica, and a request through it succeeds, then lets the client settle.
func (r *lifecycleRun) waitServed() {
	for _, h := range r.hosts {
		r.must(r.e.WaitResolves(r.ctx, h, netip.MustParseAddr(r.target[h])), "resolve "+h)
		_, err := r.e.WaitCurl(r.ctx, "http://"+h+"/")
		r.must(err, "curl "+h)
	}
	time.Sleep(settle)
}

// proxyRollout: a helm upgrade that changes the proxy's pod template. No
// request fails, and a 64 MiB download started just before completes
// byte-exact after the termination of every old proxy Pod.
func (r *lifecycleRun) proxyRollout(host, sum string) {
	old, err := r.e.ProxyPods(r.ctx)
	r.must(err, "proxy pods")
	terminating := watchTerminations(r.ctx, r.t, r.e, old)
	dl, err := r.e.StartDownload(netip.MustParseAddr(r.target[host]), host, "/bulk/64m", bulkRate)
	r.must(err, "start the download")
	var serving string
	sctx, scancel := context.WithTimeout(r.ctx, 10*time.Second)
	r.must(harness.Poll(sctx, func(context.Context) error {
		serving = servingPod(r.e, old)
		if serving == "" {
			return fmt.Errorf("no old proxy pod holds the download's connection")
		}
		return nil
	}), "the download's proxy pod")
	scancel()
	op := r.begin("proxy-rollout", r.servedJudge())
	out, err := r.e.Upgrade(r.ctx, r.t, dataplane.Values(), "--set", "proxy.podAnnotations.lifecycle=rollout")
	r.must(err, "helm upgrade: "+out)
	tctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	var termAt time.Time
	r.must(harness.Poll(tctx, func(context.Context) error {
		var ok bool
		if termAt, ok = terminating.at(serving); !ok {
			return fmt.Errorf("the download's proxy pod %s is not terminating yet", serving)
		}
		return nil
	}), "the termination of the download's proxy pod")
	// Past the lame duck: the listeners are closed, the download drains.
	time.Sleep(lameDuck + time.Second)
	r.must(dl.Hurry(), "hurry the download")
	dctx, cancel := context.WithTimeout(r.ctx, 90*time.Second)
	defer cancel()
	res, err := dl.Wait(dctx)
	r.must(err, "download")
	if len(res) != 1 {
		r.t.Fatalf("download: %d results, want 1: %+v", len(res), res)
	}
	d := res[0]
	end := d.At.Add(d.Took)
	r.t.Logf("proxy-rollout: download of %d bytes through %s took %s; the pod was terminated %s after it began, the download ended %s after that",
		d.Bytes, serving, d.Took.Round(time.Millisecond), termAt.Sub(d.At).Round(time.Millisecond), end.Sub(termAt).Round(time.Millisecond))
	switch {
	case d.Fail != "" || d.Bytes != bulkSize || d.SHA256 != sum:
		op.missed = append(op.missed, fmt.Sprintf("the download got %d bytes, sha256 %s, failure %q; want %d bytes, sha256 %s", d.Bytes, d.SHA256, d.Fail, bulkSize, sum))
	case !end.After(termAt.Add(lameDuck)):
		op.missed = append(op.missed, fmt.Sprintf("the download ended %s after its pod's termination, within the lame duck; want it to span the termination", end.Sub(termAt)))
	case end.Sub(termAt) > lameDrain:
		op.missed = append(op.missed, fmt.Sprintf("the download ended %s after its pod's termination; want within the lame duck plus drain (%s)", end.Sub(termAt), lameDrain))
	}
	r.waitRolledOut()
	time.Sleep(settle)
}

// waitRolledOut waits until the proxy's rollout has no old Pod left.
func (r *lifecycleRun) waitRolledOut() {
	d, err := r.e.CP.Clientset.AppsV1().Deployments(dataplane.TargetNamespace).List(r.ctx, metav1.ListOptions{})
	r.must(err, "proxy deployment")
	if len(d.Items) != 1 {
		r.t.Fatalf("%d deployments in %s, want the proxy alone", len(d.Items), dataplane.TargetNamespace)
	}
	r.must(r.e.WaitRolledOut(r.ctx, dataplane.TargetNamespace, d.Items[0].Name, d.Items[0].Generation), "proxy rollout")
}

// targetChange: a new target takes over the tenant's controller, as an
// operator moves it without a gap: a helm upgrade adds it beside the old
// one, and once every replica answers with it, a second upgrade removes the
// old one. Both claim the tenant's class and the new one sorts first, so it
// wins the tenant's Ingresses as soon as it may take them: once its Service
// has had a ready endpoint for each port for the plugin's settle time (the
// rolled-out proxy serves its routes, and the dataplane has programmed
// them), since the old target is ready all along. The host that stays and
// the host that moves lose no request; the moving host is answered with
// either target.
func (r *lifecycleRun) targetChange(kept, moved string) {
	targets := dataplane.DefaultTargets()
	tenant, next := targets[1], targets[1]
	next.Name, next.HTTPPort, next.HTTPSPort = "next-"+tenant.Name, 8082, 8445
	if next.Name >= tenant.Name {
		r.t.Fatalf("the new target %s must sort before %s to win the tenant's class", next.Name, tenant.Name)
	}
	cs := r.e.CP.Clientset
	ready := watchFirst(r.ctx, r.t, func(ctx context.Context) (watch.Interface, error) {
		return cs.DiscoveryV1().EndpointSlices(dataplane.TargetNamespace).Watch(ctx, metav1.ListOptions{})
	}, allTargetsReady([]string{next.Name}))
	op := r.begin("target-change", nil)
	out, err := r.e.Upgrade(r.ctx, r.t, dataplane.ValuesFor([]dataplane.Target{targets[0], tenant, next}))
	r.must(err, "helm upgrade adding "+next.Name+": "+out)
	ip, err := r.e.TargetIPOf(r.ctx, next.Name)
	r.must(err, "the new target")
	before, after := r.target[moved], ip.String()
	base := r.servedJudge(kept)
	op.judge = func(res steady.Result) (bool, bool) {
		if res.Host != moved {
			return base(res)
		}
		if res.Kind == steady.KindDNS {
			return true, !steady.Answered(res, before) && !steady.Answered(res, after)
		}
		return true, res.Fail != ""
	}
	r.target[moved] = after
	r.must(r.e.WaitResolves(r.ctx, moved, ip), "resolve "+moved+" to "+next.Name)
	readyAt := ready.wait(r.t, "a ready endpoint for "+next.Name)
	op.note = func(rs []steady.Result) string {
		var first time.Time
		for _, res := range rs {
			if res.Host == moved && res.Kind == steady.KindDNS && steady.Answered(res, after) && (first.IsZero() || res.At.Before(first)) {
				first = res.At
			}
		}
		if first.IsZero() {
			return "no answer for " + moved + " with " + next.Name
		}
		return fmt.Sprintf("%s had a ready endpoint %s after the operation began; the first answer with it for %s came %s after that",
			next.Name, readyAt.Sub(op.from).Round(time.Millisecond), moved, first.Sub(readyAt).Round(time.Millisecond))
	}
	r.waitRolledOut()
	r.waitServed()

	out, err = r.e.Upgrade(r.ctx, r.t, dataplane.ValuesFor([]dataplane.Target{targets[0], next}))
	r.must(err, "helm upgrade removing "+tenant.Name+": "+out)
	r.waitRolledOut()
	r.waitServed()
}

// coreDNSRollout: `kubectl rollout restart` of kube-dns on our image. No
// query fails.
func (r *lifecycleRun) coreDNSRollout() {
	r.begin("coredns-rollout", r.servedJudge())
	r.must(r.e.RestartCoreDNS(r.ctx), "rollout restart kube-dns")
	time.Sleep(settle)
}

// proxyCrash: one proxy Pod's process is SIGKILLed. Only HTTP requests
// that were in flight at the kill, or that started before the killed
// replica was serving again, may fail: the node agent restarts it, and the
// moment its new process accepts on the target's port is measured. Each
// failure is listed with its time; no DNS query fails.
func (r *lifecycleRun) proxyCrash() {
	pods, err := r.e.ProxyPods(r.ctx)
	r.must(err, "proxy pods")
	pod, err := r.e.CP.Clientset.CoreV1().Pods(dataplane.TargetNamespace).Get(r.ctx, pods[0], metav1.GetOptions{})
	r.must(err, "the proxy pod")
	podIP, err := netip.ParseAddr(pod.Status.PodIP)
	r.must(err, "the proxy pod's IP")
	pid, ok := r.e.Nodes[0].ContainerPID(dataplane.TargetNamespace, pods[0], "hairpin-proxy")
	if !ok {
		r.t.Fatalf("proxy pod %s has no running process", pods[0])
	}
	port := netip.AddrPortFrom(podIP, uint16(dataplane.DefaultTargets()[0].HTTPPort))
	op := r.begin("proxy-crash", nil)
	crashAt := time.Now()
	r.must(syscall.Kill(pid, syscall.SIGKILL), "SIGKILL the proxy")
	serving := pollFirst(r.ctx, 10*time.Millisecond, func(ctx context.Context) error {
		if now, ok := r.e.Nodes[0].ContainerPID(dataplane.TargetNamespace, pods[0], "hairpin-proxy"); !ok || now == pid {
			return fmt.Errorf("not restarted yet")
		}
		c, err := r.e.DialNode(ctx, port.String())
		if err != nil {
			return err
		}
		return c.Close()
	})
	servingAt := serving.wait(r.t, "the restarted proxy accepting on "+port.String())
	r.t.Logf("proxy-crash: %s was serving again %s after the kill", pods[0], servingAt.Sub(crashAt).Round(time.Millisecond))
	base := r.servedJudge()
	op.judge = func(res steady.Result) (bool, bool) {
		counts, failed := base(res)
		if counts && failed {
			r.t.Logf("proxy-crash: %s %s started %s after the kill, failed: %s", res.Kind, res.Host, res.At.Sub(crashAt).Round(time.Millisecond), res.Fail)
		}
		return counts, failed
	}
	op.allowed = func(_ steady.Tally, rs []steady.Result) int {
		n := 0
		for _, res := range rs {
			if c, f := base(res); c && f && res.Kind == steady.KindHTTP && res.At.Before(servingAt) {
				n++
			}
		}
		return n
	}
	r.waitRolledOut()
	time.Sleep(settle)
}

// apiserverOutage: the apiserver is down for 30 s. Nothing fails, and an
// Ingress written once it is back is answered within 5 s of the write.
func (r *lifecycleRun) apiserverOutage(ic cluster.IngressController) {
	op := r.begin("apiserver-outage", r.servedJudge())
	r.must(r.e.CP.StopAPIServer(), "stop the apiserver")
	up := false
	defer func() {
		if !up {
			if err := r.e.CP.StartAPIServer(); err != nil {
				r.t.Errorf("start the apiserver again: %v", err)
			}
		}
	}()
	time.Sleep(outage)
	r.must(r.e.CP.StartAPIServer(), "start the apiserver again")
	up = true
	host := "lifecycle." + dataplane.Zones[0]
	ings := r.e.CP.Clientset.NetworkingV1().Ingresses(ic.Namespace)
	written := time.Now()
	_, err := ings.Create(r.ctx, lifecycleIngress(ic, host), metav1.CreateOptions{})
	r.must(err, "create an Ingress after the outage")
	r.t.Cleanup(func() {
		_ = ings.Delete(context.Background(), "lifecycle", metav1.DeleteOptions{})
	})
	wctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	err = r.e.WaitResolves(wctx, host, netip.MustParseAddr(r.target[ic.Hosts[0]]))
	took := time.Since(written)
	r.t.Logf("apiserver-outage: the Ingress written after the outage was answered by every replica in %s", took.Round(time.Millisecond))
	if err != nil || took > changeAfterOwner {
		op.missed = append(op.missed, fmt.Sprintf("the Ingress written after the outage was answered after %s (%v); want within %s", took.Round(time.Millisecond), err, changeAfterOwner))
	}
	r.must(ings.Delete(r.ctx, "lifecycle", metav1.DeleteOptions{}), "delete the Ingress")
	time.Sleep(settle)
}

func lifecycleIngress(ic cluster.IngressController, host string) *networkingv1.Ingress {
	pathType := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "lifecycle", Namespace: ic.Namespace},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To(ic.Class),
			Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "app", Port: networkingv1.ServiceBackendPort{Number: 80}},
				}}},
			}}}},
		},
	}
}

// uninstall: helm uninstall. Every answer is public again within 1 s of the
// deletion of the last target Service; requests then fail by design.
func (r *lifecycleRun) uninstall() {
	cs := r.e.CP.Clientset
	left := map[string]bool{}
	for _, h := range r.hosts {
		left[h] = true
	}
	gone := watchFirst(r.ctx, r.t, func(ctx context.Context) (watch.Interface, error) {
		return cs.CoreV1().Services(dataplane.TargetNamespace).Watch(ctx, metav1.ListOptions{})
	}, lastDeleted(len(r.targets)))
	op := r.begin("uninstall", nil)
	out, err := r.e.Uninstall(r.ctx)
	r.must(err, "helm uninstall: "+out)
	uninstalled := time.Now()
	goneAt := gone.wait(r.t, "the deletion of every target Service")
	public, target := maps.Clone(r.public), maps.Clone(r.target)
	op.judge = dnsWant(func(res steady.Result) (string, bool) {
		if res.At.Before(goneAt.Add(answerWithin)) {
			if steady.Answered(res, target[res.Host]) {
				return target[res.Host], true
			}
		}
		return public[res.Host], true
	})
	for _, h := range r.hosts {
		r.must(r.e.WaitResolves(r.ctx, h, netip.MustParseAddr(public[h])), "public answer after the uninstall")
	}
	answered := time.Now()
	r.must(r.e.WaitNothingLeft(r.ctx), "uninstall")
	r.t.Logf("uninstall: after it began, the last target Service was deleted at %s, helm returned at %s, every replica answered publicly at %s, nothing was left at %s",
		goneAt.Sub(op.from).Round(time.Millisecond), uninstalled.Sub(op.from).Round(time.Millisecond), answered.Sub(op.from).Round(time.Millisecond), time.Since(op.from).Round(time.Millisecond))
	time.Sleep(settle)
}

// report prints each operation's line for one client's results (client
// names it, "" for the first) and fails the test for each goal missed. The
// latencies are figures, not goals.
func (r *lifecycleRun) report(client string, results []steady.Result, end time.Time) {
	for i, op := range r.ops {
		to := end
		if i+1 < len(r.ops) {
			to = r.ops[i+1].from
		}
		rs := steady.Since(results, op.from, to)
		tally := steady.Count(rs, op.judge)
		r.t.Logf("lifecycle: %s%s requests=%d failed=%d window_ms=%d retries=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f", op.name, client,
			tally.Requests, tally.Failed, tally.Window.Milliseconds(), tally.Retries, ms(tally.P50), ms(tally.P99), ms(tally.Max))
		if op.note != nil {
			r.t.Logf("%s%s: %s", op.name, client, op.note(rs))
		}
		allowed := 0
		if op.allowed != nil {
			allowed = op.allowed(tally, results)
		}
		if tally.Requests == 0 {
			r.t.Errorf("%s%s: the client made no request", op.name, client)
		}
		if tally.Failed > allowed {
			r.t.Errorf("%s%s: %d failed, want at most %d; first failures:\n%s", op.name, client, tally.Failed, allowed, samples(tally.Samples, op.from))
		}
	}
}

// reportMissed fails the test for each goal missed that no tally shows,
// once both clients' results have been judged.
func (r *lifecycleRun) reportMissed() {
	for _, op := range r.ops {
		for _, m := range op.missed {
			r.t.Errorf("%s: %s", op.name, m)
		}
	}
}

// ms is d in milliseconds, for a lifecycle line.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func samples(rs []steady.Result, from time.Time) string {
	var b strings.Builder
	for _, s := range rs {
		// The clock time too, to set a failure beside the components'
		// logs (UTC, as they print it).
		fmt.Fprintf(&b, "  +%s (%s) %s %s: addr %s answers %v status %d fail %q (took %s)\n",
			s.At.Sub(from).Round(time.Millisecond), s.At.UTC().Format("15:04:05.000"), s.Kind, s.Host, s.Addr, s.Answers, s.Status, s.Fail, s.Took.Round(time.Millisecond))
	}
	return b.String()
}

// firstEvent records when a watch first saw an event that matched.
type firstEvent struct {
	at   chan time.Time
	errc chan error
}

// watchFirst watches with open until match says an event is the one.
func watchFirst(ctx context.Context, t *testing.T, open func(context.Context) (watch.Interface, error), match func(watch.Event) bool) *firstEvent {
	t.Helper()
	w, err := open(ctx)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	f := &firstEvent{at: make(chan time.Time, 1), errc: make(chan error, 1)}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				f.errc <- ctx.Err()
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					f.errc <- fmt.Errorf("the watch ended")
					return
				}
				if match(ev) {
					f.at <- time.Now()
					return
				}
			}
		}
	}()
	return f
}

// wait returns when the event came.
func (f *firstEvent) wait(t *testing.T, what string) time.Time {
	t.Helper()
	select {
	case at := <-f.at:
		return at
	case err := <-f.errc:
		t.Fatalf("waiting for %s: %v", what, err)
	case <-time.After(2 * time.Minute):
		t.Fatalf("waiting for %s: no event in 2 minutes", what)
	}
	return time.Time{}
}

// pollFirst polls probe every interval until it passes.
func pollFirst(ctx context.Context, interval time.Duration, probe harness.Probe) *firstEvent {
	f := &firstEvent{at: make(chan time.Time, 1), errc: make(chan error, 1)}
	go func() {
		if err := harness.PollEvery(ctx, interval, probe); err != nil {
			f.errc <- err
			return
		}
		f.at <- time.Now()
	}()
	return f
}

// ciliumServes passes once cilium-agent has an active backend for every
// target's ClusterIP.
func ciliumServes(e *dataplane.Env, targets []string) harness.Probe {
	return func(ctx context.Context) error {
		active, err := e.CiliumActiveBackends(ctx)
		if err != nil {
			return err
		}
		for _, t := range targets {
			if name := dataplane.TargetNamespace + "/" + t; active[name] == 0 {
				return fmt.Errorf("cilium-agent has no active backend for %s yet", name)
			}
		}
		return nil
	}
}

// kubeProxyServes passes once a connection from the node to port 80 of
// every address in ips reaches a listener: kube-proxy has written the
// endpoints of those ClusterIPs (it handles the node's own connections as a
// Pod's).
func kubeProxyServes(e *dataplane.Env, ips []string) harness.Probe {
	return func(ctx context.Context) error {
		for _, ip := range ips {
			dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			c, err := e.DialNode(dctx, net.JoinHostPort(ip, "80"))
			cancel()
			if err != nil {
				return fmt.Errorf("kube-proxy's path to %s: %w", ip, err)
			}
			c.Close()
		}
		return nil
	}
}

// allTargetsReady matches the event after which every target's Service
// has a ready endpoint.
func allTargetsReady(targets []string) func(watch.Event) bool {
	ready := map[string]bool{}
	return func(ev watch.Event) bool {
		s, ok := ev.Object.(*discoveryv1.EndpointSlice)
		if !ok || ev.Type == watch.Deleted {
			return false
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
				ready[s.Labels[discoveryv1.LabelServiceName]] = true
			}
		}
		for _, t := range targets {
			if !ready[t] {
				return false
			}
		}
		return true
	}
}

// lastDeleted matches the n-th deletion of a target Service.
func lastDeleted(n int) func(watch.Event) bool {
	deleted := 0
	return func(ev watch.Event) bool {
		s, ok := ev.Object.(*corev1.Service)
		if !ok || ev.Type != watch.Deleted {
			return false
		}
		if _, isTarget := s.Labels["hairpin.coredns-hairpin.io/target"]; isTarget {
			deleted++
		}
		return deleted >= n
	}
}

// terminations records when each of a set of Pods got its deletion
// timestamp, as the node agent sends SIGTERM.
type terminations struct {
	mu  sync.Mutex
	got map[string]time.Time
}

func watchTerminations(ctx context.Context, t *testing.T, e *dataplane.Env, pods []string) *terminations {
	t.Helper()
	w, err := e.CP.Clientset.CoreV1().Pods(dataplane.TargetNamespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch the proxy pods: %v", err)
	}
	want := map[string]bool{}
	for _, p := range pods {
		want[p] = true
	}
	tr := &terminations{got: map[string]time.Time{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || !want[p.Name] || p.DeletionTimestamp == nil {
				continue
			}
			tr.mu.Lock()
			if _, seen := tr.got[p.Name]; !seen {
				tr.got[p.Name] = time.Now()
			}
			done := len(tr.got) == len(want)
			tr.mu.Unlock()
			if done {
				return
			}
		}
	}()
	return tr
}

// at returns when pod's termination was seen.
func (tr *terminations) at(pod string) (time.Time, bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	t, ok := tr.got[pod]
	return t, ok
}

// servingPod returns the proxy Pod among pods that holds an established
// connection from the client Pod: the download's.
func servingPod(e *dataplane.Env, pods []string) string {
	client := e.ClientIP().As4()
	// /proc/net/tcp writes an IPv4 address as the hex of its bytes in host
	// (little-endian) order; /proc/net/tcp6, where a dual-stack listener's
	// connections are, writes ::ffff:A.B.C.D with the same last word.
	want := fmt.Sprintf("%02X%02X%02X%02X", client[3], client[2], client[1], client[0])
	for _, p := range pods {
		pid, ok := e.Nodes[0].ContainerPID(dataplane.TargetNamespace, p, "hairpin-proxy")
		if !ok {
			continue
		}
		for _, table := range []string{"tcp", "tcp6"} {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n")[1:] {
				f := strings.Fields(line)
				if len(f) > 3 && f[3] == "01" && strings.HasSuffix(strings.Split(f[2], ":")[0], want) {
					return p
				}
			}
		}
	}
	return ""
}
