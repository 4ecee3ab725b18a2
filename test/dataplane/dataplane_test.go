package dataplane_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/coredns-hairpin/hairpin/test/dataplane"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
	"github.com/coredns-hairpin/hairpin/test/harness/hoststate"
	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// TestMain checks that the machine is as the clusters found it. The tests
// run one at a time: side by side on 2 cores (t.Parallel, two or four at
// once) the lifecycle's CoreDNS rollout and the migration's way back missed
// their goals, and a node agent started a Pod too late.
func TestMain(m *testing.M) {
	if _, err := cluster.DataplanesChosen(); err != nil {
		fmt.Fprintf(os.Stderr, "dataplane: %v\n", err)
		os.Exit(2)
	}
	// The machine as the clusters found it: sysctls, rule sets, BPF
	// attachments, bpffs mounts (only root can read them all).
	var before *hoststate.Snapshot
	if os.Geteuid() == 0 {
		var err error
		if before, err = hoststate.Take(); err != nil && harness.Required() {
			fmt.Fprintf(os.Stderr, "dataplane: %v\n", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if err := dataplane.StopShared(); err != nil {
		fmt.Fprintf(os.Stderr, "dataplane: %v\n", err)
		code = 1
	}
	// Nothing stays behind: every namespace this run made is gone, and the
	// machine is as it was.
	if left := netns.Ours(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "dataplane: network namespaces left behind: %v\n", left)
		code = 1
	}
	if before != nil {
		if diff := hoststate.WaitSame(before, 15*time.Second); len(diff) > 0 {
			fmt.Fprintf(os.Stderr, "dataplane: the machine is not as it was:\n%s\n", strings.Join(diff, "\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// TestHairpinOnTheRealDataplane tells the story on each dataplane
// (kube-proxy in iptables and nftables mode, Cilium as kube-proxy
// replacement), in order: each step builds on the one before, as on a
// cluster. The iptables mode tells its smoke only (dataplane.Smoke), and
// the re-rendered Corefile, which no dataplane touches, is told in the
// first full mode alone.
func TestHairpinOnTheRealDataplane(t *testing.T) {
	dataplane.EachMode(t, cluster.Dataplanes, story)
}

func story(t *testing.T, mode string, e *dataplane.Env) {
	root, tenant := dataplane.Controllers[0], dataplane.Controllers[1]
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	smoke := dataplane.Smoke(mode)
	caps := e.Capabilities()
	step := func(name string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			t.FailNow()
		}
	}
	// fullStep is a step of the whole story only, which the smoke leaves
	// out: checks and ipMode, whose logic is the product's, not the
	// dataplane's.
	fullStep := func(name string, fn func(t *testing.T)) {
		if !smoke {
			step(name, fn)
		}
	}

	step("TheDataplaneServesTheServices", func(t *testing.T) {
		procs, err := e.NodeProcesses()
		if err != nil {
			t.Fatal(err)
		}
		for _, agent := range cluster.ServiceAgents {
			if runs := slices.Contains(procs, agent); runs != (agent == caps.Agent) {
				t.Fatalf("the node runs %v; want %s and no other of %v", procs, caps.Agent, cluster.ServiceAgents)
			}
		}
		if caps.Frontends {
			// Cilium programs each LoadBalancer IP as a frontend of its own.
			if err := waitFrontends(ctx, e, []netip.Addr{root.LBIP, tenant.LBIP}, nil); err != nil {
				t.Fatal(err)
			}
		}
	})

	step("BrokenWithoutHairpin", func(t *testing.T) {
		brokenWithoutHairpin(ctx, t, e, dataplane.Controllers)
	})

	step("ShortCircuitedPerPacketInThePodAtConnectInTheNode", func(t *testing.T) {
		backends, err := controllerPodIPs(ctx, e, root)
		if err != nil {
			t.Fatal(err)
		}
		translatedWhereTheDataplaneSays(ctx, t, e, netip.AddrPortFrom(root.LBIP, 80), backends)
		if len(caps.BPFPrograms) > 0 {
			progs, err := e.AttachedBPFPrograms()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range caps.BPFPrograms {
				if !slices.Contains(progs, p) {
					t.Errorf("no BPF program %s attached; the attached ones are %v", p, progs)
				}
			}
		}
	})

	fullStep("CheckFailsBeforeInstallNamingBothControllers", func(t *testing.T) {
		checkFailsNamingEveryController(ctx, t, e, dataplane.Controllers)
	})

	step("InstallChart", func(t *testing.T) {
		out, err := e.Install(ctx, t)
		if err != nil {
			t.Fatalf("helm install: %v\n%s", err, out)
		}
		pods, err := e.CP.Clientset.CoreV1().Pods(dataplane.TargetNamespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("proxy pods: %d, %v", len(pods.Items), err)
		}
		for _, p := range pods.Items {
			if !podReady(&p) {
				t.Errorf("proxy pod %s is not Ready after helm install --wait", p.Name)
			}
		}
	})

	step("FixedEachHostReachesItsOwnController", func(t *testing.T) {
		fixedEachHostReachesItsOwnController(ctx, t, e, dataplane.Controllers)
	})

	fullStep("CheckPassesAfterInstall", func(t *testing.T) {
		checkPassesAfterInstall(ctx, t, e)
	})

	fullStep("IPModeProxyGoesThroughTheLoadBalancer", func(t *testing.T) {
		if err := e.SetIPMode(ctx, tenant, corev1.LoadBalancerIPModeProxy); err != nil {
			t.Fatal(err)
		}
		if caps.Frontends {
			// KEP-1860 as Cilium >= 1.18.1 implements it: no frontend at
			// all for a non-VIP LoadBalancer IP.
			if err := waitFrontends(ctx, e, []netip.Addr{root.LBIP}, []netip.Addr{tenant.LBIP}); err != nil {
				t.Fatal(err)
			}
		}
		url := "http://" + tenant.LBIP.String() + "/"
		var body string
		err := harness.Poll(ctx, func(ctx context.Context) error {
			out, _, err := e.Nodes[0].Exec(ctx, "default", "client", "client", "curl", "-sS", "--max-time", "3", "-H", "Host: "+tenant.Hosts[0], url)
			body = out
			if err != nil || !strings.Contains(out, "controller="+tenant.Namespace) {
				return fmt.Errorf("curl %s: %q, %v", url, out, err)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("with ipMode Proxy, kube-proxy must leave %s to the load balancer: %v", tenant.LBIP, err)
		}
		if !strings.Contains(body, "client="+e.ClientIPOutside().String()) {
			t.Errorf("through HAProxy the controller must see the client pod as %s: %q", e.ClientIPOutside(), body)
		}
		// HAProxy writes a TCP log line when the connection ends, which can
		// be after curl has returned.
		logCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := harness.Poll(logCtx, func(context.Context) error {
			if !strings.Contains(e.LoadBalancerLog(), e.ClientIPOutside().String()) {
				return fmt.Errorf("%s not in the log", e.ClientIPOutside())
			}
			return nil
		}); err != nil {
			t.Errorf("HAProxy logged no connection from the client pod %s: %v\n%s", e.ClientIPOutside(), err, e.LoadBalancerLog())
		}
		// The other controller is still short-circuited, for either client.
		for _, pod := range []string{dataplane.ClientPod, dataplane.HostClientPod} {
			shortCircuited(ctx, t, e, root, pod, "-H", "Host: "+root.Hosts[0], "http://"+root.LBIP.String()+"/")
		}
	})

	fullStep("CheckSaysTheProxyModeControllerNeedsNoTarget", func(t *testing.T) {
		r := check(ctx, t, e)
		if r.Exit != 0 {
			t.Errorf("exit %d with ipMode Proxy; a needless target is a warning\n%s", r.Exit, r.Table)
		}
		if w := r.Warned("target-unnecessary"); !dataplane.Mentions(w, tenant.Namespace) {
			t.Errorf("no target-unnecessary warning names %s: %+v\n%s", tenant.Namespace, w, r.Table)
		}
		// Both dataplanes here honour ipMode: Proxy (kube-proxy >= 1.30,
		// Cilium >= 1.18.1), and the check says so.
		const honoured = "but not those with ipMode: Proxy"
		if d := r.Passed("dataplane"); len(d) != 1 || !strings.HasSuffix(d[0].Message, honoured) {
			t.Errorf("the dataplane line %+v does not end %q\n%s", d, honoured, r.Table)
		}
		want := fmt.Sprintf("needs no hairpin: nothing is short-circuited: %s/%s %s (ipMode: Proxy)", tenant.Namespace, tenant.Service(), tenant.LBIP)
		if !dataplane.Mentions(r.Passed("lb-status"), want) {
			t.Errorf("no lb-status line says %q\n%s", want, r.Table)
		}
	})

	fullStep("CheckFailsWithTheHintWhenATargetsZonesBreak", func(t *testing.T) {
		restore := breakZones(ctx, t, e, root.Namespace)
		defer restore()
		var r *dataplane.CheckReport
		if err := harness.Poll(ctx, func(ctx context.Context) error {
			r = check(ctx, t, e)
			if r.Exit != 1 || len(r.Failed("target-zones")) == 0 {
				return fmt.Errorf("exit %d, target-zones %+v", r.Exit, r.Failed("target-zones"))
			}
			return nil
		}); err != nil {
			t.Fatalf("kubectl hairpin check with the zones broken: %v\n%s", err, r.Table)
		}
		want := "targets." + root.Namespace + ".zones"
		if f := r.Failed("target-zones"); !strings.Contains(f[0].Hint, want) {
			t.Errorf("the hint %q does not name the chart value %s", f[0].Hint, want)
		}
	})

	// The Corefile's re-render is CoreDNS's reload, the same on every
	// dataplane: once is enough.
	if mode == dataplane.FullModes[0] {
		step("ReRenderedCorefileKeepsTheAnswers", rerenderedCorefileKeepsTheAnswers(ctx, e))
	}

	step("UninstallRestoresThePublicAnswersAndLeavesNothing", func(t *testing.T) {
		uninstallRestoresThePublicAnswers(ctx, t, e, dataplane.Controllers)
	})
}

// rerenderedCorefileKeepsTheAnswers is the story's step for a Corefile that
// an operator edits and the distribution then re-renders.
func rerenderedCorefileKeepsTheAnswers(ctx context.Context, e *dataplane.Env) func(t *testing.T) {
	return func(t *testing.T) {
		// An operator edits the Corefile; the distribution's next
		// re-render writes its stock form again. Each is a reload that
		// builds CoreDNS afresh from a Corefile naming no hairpin.
		for _, edit := range []struct{ what, text string }{
			{"the operator's edit", e.OperatorEdit()},
			{"the stock re-render", e.Corefile},
		} {
			start := time.Now()
			if err := e.ApplyAndReload(ctx, edit.text); err != nil {
				t.Fatalf("%s: %v", edit.what, err)
			}
			t.Logf("%s: every kube-dns pod reloaded in %s", edit.what, time.Since(start).Round(time.Second))
			for _, ic := range dataplane.Controllers {
				target, err := e.TargetIP(ctx, ic)
				if err != nil {
					t.Fatal(err)
				}
				if err := e.WaitResolves(ctx, ic.Hosts[0], target); err != nil {
					t.Fatalf("after %s: %v", edit.what, err)
				}
			}
		}
	}
}

// waitFrontends waits until Cilium has a frontend on each address of want
// and none on any of not.
func waitFrontends(ctx context.Context, e *dataplane.Env, want, not []netip.Addr) error {
	var last []netip.AddrPort
	err := harness.Poll(ctx, func(ctx context.Context) error {
		fes, err := e.CiliumFrontends(ctx)
		if err != nil {
			return err
		}
		last = fes
		has := func(a netip.Addr) bool {
			return slices.ContainsFunc(fes, func(fe netip.AddrPort) bool { return fe.Addr() == a })
		}
		for _, a := range want {
			if !has(a) {
				return fmt.Errorf("no frontend on %s", a)
			}
		}
		for _, a := range not {
			if has(a) {
				return fmt.Errorf("a frontend on %s", a)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cilium-agent's frontends %v: want %v, none on %v: %w", last, want, not, err)
	}
	return nil
}

// controllerPodIPs returns the addresses of ic's controller Pods.
func controllerPodIPs(ctx context.Context, e *dataplane.Env, ic cluster.IngressController) ([]netip.Addr, error) {
	pods, err := e.CP.Clientset.CoreV1().Pods(ic.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	for _, p := range pods.Items {
		if a, err := netip.ParseAddr(p.Status.PodIP); err == nil {
			ips = append(ips, a)
		}
	}
	return ips, nil
}

// check runs kubectl hairpin check and fails t if it could not run.
func check(ctx context.Context, t *testing.T, e *dataplane.Env) *dataplane.CheckReport {
	t.Helper()
	r, err := e.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// breakZones empties the zones annotation of target name, as a bad edit
// would, and returns what puts it back.
func breakZones(ctx context.Context, t *testing.T, e *dataplane.Env, name string) func() {
	t.Helper()
	const key = "hairpin.coredns-hairpin.io/zones"
	svcs := e.CP.Clientset.CoreV1().Services(dataplane.TargetNamespace)
	svc, err := svcs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := svc.Annotations[key]
	patch := func(v string) error {
		body := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, v)
		_, err := svcs.Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	if err := patch(""); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := patch(old); err != nil {
			t.Errorf("restore the zones of %s: %v", name, err)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
