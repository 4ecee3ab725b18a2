package dataplane_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/coredns-hairpin/hairpin/test/dataplane"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
	"github.com/coredns-hairpin/hairpin/test/harness/netns"
	"github.com/coredns-hairpin/hairpin/test/harness/steady"
)

func TestMain(m *testing.M) {
	// This binary is also the lifecycle test's steady client.
	steady.RunIfChild()
	code := m.Run()
	if err := dataplane.StopShared(); err != nil {
		fmt.Fprintf(os.Stderr, "dataplane: %v\n", err)
		code = 1
	}
	// Nothing stays behind: every namespace this run made is gone.
	if left := netns.Ours(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "dataplane: network namespaces left behind: %v\n", left)
		code = 1
	}
	os.Exit(code)
}

// TestHairpinOnTheRealDataplane tells the whole story on both kube-proxy
// modes, in order: each step builds on the one before, as on a cluster.
func TestHairpinOnTheRealDataplane(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: a whole cluster")
	}
	for _, mode := range cluster.ProxyModes {
		t.Run(mode, func(t *testing.T) { story(t, mode) })
	}
}

func story(t *testing.T, mode string) {
	e := dataplane.Shared(t, mode)
	root, tenant := dataplane.Controllers[0], dataplane.Controllers[1]
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	step := func(name string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			t.FailNow()
		}
	}

	step("BrokenWithoutHairpin", func(t *testing.T) {
		for _, ic := range dataplane.Controllers {
			host := ic.Hosts[0]
			if err := e.WaitResolves(ctx, host, ic.LBIP); err != nil {
				t.Fatalf("the cluster DNS must give the public answer first: %v", err)
			}
			// From the internet, through HAProxy's send-proxy, it works;
			// once it does, kube-proxy has the controller's endpoints.
			body, err := e.WaitServedFromOutside(ctx, ic, host)
			if err != nil || !strings.Contains(body, "client="+cluster.ExternalClientIP.String()) {
				t.Fatalf("outside client through the load balancer: %q, %v", body, err)
			}
			out, err := e.Curl(ctx, "http://"+host+"/")
			if err == nil {
				t.Fatalf("the client pod reached %s through the short-circuited LB IP; want the controller to drop the headerless connection; got %q", host, out)
			}
			if err := harness.Poll(ctx, func(ctx context.Context) error {
				log, err := e.ErrorLog(ctx, ic)
				if err != nil || !strings.Contains(log, "broken header") {
					return fmt.Errorf("no broken header in %s's log yet (%v)", ic.Namespace, err)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	})

	step("CheckFailsBeforeInstallNamingBothControllers", func(t *testing.T) {
		r := check(ctx, t, e)
		if r.Exit != 1 {
			t.Errorf("kubectl hairpin check exited %d before the install; want 1\n%s", r.Exit, r.Table)
		}
		fails := r.Failed("ingress-class-target")
		for _, ic := range dataplane.Controllers {
			if !dataplane.Mentions(fails, ic.Class) {
				t.Errorf("no failed ingress-class-target names class %s: %+v\n%s", ic.Class, fails, r.Table)
			}
		}
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
		for i, ic := range dataplane.Controllers {
			other := dataplane.Controllers[1-i]
			host := ic.Hosts[0]
			target, err := e.TargetIP(ctx, ic)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := e.WaitResolves(ctx, host, target); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s answered with its target %s by every kube-dns replica %s after the install", host, target, time.Since(start).Round(time.Millisecond))
			for _, scheme := range []string{"http", "https"} {
				body, err := e.WaitCurl(ctx, scheme+"://"+host+"/")
				if err != nil {
					t.Fatalf("%s through the target: %v", scheme, err)
				}
				want := fmt.Sprintf("client=%s controller=%s", e.ClientIP(), ic.Namespace)
				if !strings.Contains(body, want) {
					t.Fatalf("%s://%s answered %q; want it to contain %q", scheme, host, body, want)
				}
			}
			if _, err := e.WaitRequest(ctx, ic, host, e.ClientIP()); err != nil {
				t.Errorf("no request from the client pod: %v", err)
			}
			if reqs, _ := e.Requests(ctx, other, host); len(reqs) > 0 {
				t.Errorf("%s's host reached the other controller %s: %+v", host, other.Namespace, reqs)
			}
		}
	})

	step("CheckPassesAfterInstall", func(t *testing.T) {
		var r *dataplane.CheckReport
		// CoreDNS's metrics follow the install within its watch events.
		if err := harness.Poll(ctx, func(ctx context.Context) error {
			r = check(ctx, t, e)
			if r.Exit != 0 {
				return fmt.Errorf("exit %d", r.Exit)
			}
			return nil
		}); err != nil {
			t.Fatalf("kubectl hairpin check after the install: %v\n%s", err, r.Table)
		}
	})

	step("IPModeProxyGoesThroughTheLoadBalancer", func(t *testing.T) {
		if err := e.SetIPMode(ctx, tenant, corev1.LoadBalancerIPModeProxy); err != nil {
			t.Fatal(err)
		}
		url := "http://" + tenant.LBIP.String() + "/"
		var body string
		err := harness.Poll(ctx, func(ctx context.Context) error {
			out, _, err := e.Node.Exec(ctx, "default", "client", "client", "curl", "-sS", "--max-time", "3", "-H", "Host: "+tenant.Hosts[0], url)
			body = out
			if err != nil || !strings.Contains(out, "controller="+tenant.Namespace) {
				return fmt.Errorf("curl %s: %q, %v", url, out, err)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("with ipMode Proxy, kube-proxy must leave %s to the load balancer: %v", tenant.LBIP, err)
		}
		if !strings.Contains(body, "client="+e.ClientIP().String()) {
			t.Errorf("through HAProxy the controller must see the client pod: %q", body)
		}
		// HAProxy writes a TCP log line when the connection ends, which can
		// be after curl has returned.
		logCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := harness.Poll(logCtx, func(context.Context) error {
			if !strings.Contains(e.LoadBalancerLog(), e.ClientIP().String()) {
				return fmt.Errorf("%s not in the log", e.ClientIP())
			}
			return nil
		}); err != nil {
			t.Errorf("HAProxy logged no connection from the client pod %s: %v\n%s", e.ClientIP(), err, e.LoadBalancerLog())
		}
		// The other controller is still short-circuited.
		rootURL := "http://" + root.LBIP.String() + "/"
		if out, _, err := e.Node.Exec(ctx, "default", "client", "client", "curl", "-sS", "--max-time", "3", "-H", "Host: "+root.Hosts[0], rootURL); err == nil {
			t.Errorf("%s (ipMode VIP) answered a headerless request: %q", root.LBIP, out)
		}
	})

	step("CheckSaysTheProxyModeControllerNeedsNoTarget", func(t *testing.T) {
		r := check(ctx, t, e)
		if r.Exit != 0 {
			t.Errorf("exit %d with ipMode Proxy; a needless target is a warning\n%s", r.Exit, r.Table)
		}
		if w := r.Warned("target-unnecessary"); !dataplane.Mentions(w, tenant.Namespace) {
			t.Errorf("no target-unnecessary warning names %s: %+v\n%s", tenant.Namespace, w, r.Table)
		}
	})

	step("CheckFailsWithTheHintWhenATargetsZonesBreak", func(t *testing.T) {
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

	step("ReRenderedCorefileKeepsTheAnswers", func(t *testing.T) {
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
	})

	step("UninstallRestoresThePublicAnswersAndLeavesNothing", func(t *testing.T) {
		if out, err := e.Uninstall(ctx); err != nil {
			t.Fatalf("helm uninstall: %v\n%s", err, out)
		}
		for _, ic := range dataplane.Controllers {
			if err := e.WaitResolves(ctx, ic.Hosts[0], ic.LBIP); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.WaitNothingLeft(ctx); err != nil {
			t.Fatal(err)
		}
	})
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
