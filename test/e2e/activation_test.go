package e2e_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// answerTimeout bounds the wait for a changed answer: the watch event is
// served within milliseconds, but `cache 30` in the distributions' Corefiles
// may hold the previous answer for its TTL (5 s).
const answerTimeout = 20 * time.Second

// publicDNS starts the public DNS stand-in, which answers every name in
// e2e.Zone with lb, and returns its address.
func publicDNS(ctx context.Context, t *testing.T, coredns string, lb netip.Addr) string {
	t.Helper()
	dir := t.TempDir()
	addr := harness.FreeAddr(t, "127.0.0.1")
	zone := harness.WriteFile(t, dir, "example.com.zone", e2e.PublicZone(lb))
	conf := harness.WriteFile(t, dir, "Corefile.public", e2e.PublicCorefile(addr, e2e.ZoneFile{Zone: e2e.Zone, Path: zone}))
	p := harness.StartProcess(t, "public-dns", coredns, "-conf", conf)
	p.RequireReady(ctx, 30*time.Second, harness.DNSProbe(addr, e2e.Zone, dns.TypeSOA))
	return addr
}

// distributionEnv is what the tests on distribution Corefiles share: the
// control plane, bin/coredns, and the public DNS stand-in (upstream) that
// answers every name in e2e.Zone with the load balancer address lb.
type distributionEnv struct {
	cp       *harness.ControlPlane
	coredns  string
	lb       netip.Addr
	upstream string
}

// newDistributionEnv starts the public DNS stand-in on the package's control
// plane and returns a context that ends after timeout, or with t.
func newDistributionEnv(t *testing.T, timeout time.Duration) (context.Context, distributionEnv) {
	t.Helper()
	env := distributionEnv{cp: controlPlane(t), coredns: harness.RequireBinary(t, "coredns"), lb: harness.FreeLoopbackIP(t)}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	env.upstream = publicDNS(ctx, t, env.coredns, env.lb)
	return ctx, env
}

// distributionDNS is our CoreDNS running a distribution's stock Corefile.
type distributionDNS struct {
	proc     *harness.Process
	listen   string
	path     string // the Corefile on disk
	corefile string // its stock text, as the test runs it
}

// startDistributionDNS runs bin/coredns with the named distribution's
// Corefile, with only the substitutions of e2e.LocalCorefile, and env added
// to the child's environment.
func startDistributionDNS(ctx context.Context, t *testing.T, coredns, name, upstream string, cp *harness.ControlPlane, env ...string) *distributionDNS {
	t.Helper()
	src, err := e2e.DistributionCorefile(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	le := e2e.LocalEnv{
		Listen: harness.FreeAddr(t, "127.0.0.1"), Health: harness.FreeAddr(t, "127.0.0.1"),
		Ready: harness.FreeAddr(t, "127.0.0.1"), Metrics: harness.FreeAddr(t, "127.0.0.1"),
		Kubeconfig: cp.Kubeconfig, Upstream: upstream, Dir: filepath.Join(dir, "etc-coredns"),
	}
	// k3s: its NodeHosts file, and the coredns-custom mount, empty as on a
	// fresh install (both imports match nothing).
	if err := os.MkdirAll(filepath.Join(le.Dir, "custom"), 0o755); err != nil {
		t.Fatal(err)
	}
	harness.WriteFile(t, le.Dir, "NodeHosts", "127.0.0.2 node-1\n")
	local, err := e2e.LocalCorefile(src, le)
	if err != nil {
		t.Fatal(err)
	}
	d := &distributionDNS{listen: le.Listen, path: harness.WriteFile(t, dir, "Corefile", local), corefile: local}
	cmd := exec.Command(coredns, "-conf", d.path)
	cmd.Env = append(os.Environ(), env...)
	d.proc = harness.StartCmd(t, "coredns-"+name, cmd)
	d.proc.RequireReady(ctx, 30*time.Second, harness.HTTPProbe("http://"+le.Ready+"/ready"))
	d.proc.RequireReady(ctx, 30*time.Second, harness.DNSProbe(le.Listen, e2e.Zone, dns.TypeSOA))
	return d
}

// answers waits until the server answers host's A with exactly want, then
// asks once more with the real dig and checks that answer too.
func answers(ctx context.Context, t *testing.T, server, host string, want netip.Addr, what string) {
	t.Helper()
	wait, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	if _, err := waitForA(wait, server, host, want, time.Now()); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	wantAddrs(t, what, digA(ctx, t, server, host), want)
}

// reloaded is what caddy logs at the end of a successful restart with a
// newly loaded Corefile (SIGUSR1, or the reload plugin seeing a change); a
// failed restart keeps the old instance and does not log it.
const reloaded = "[INFO] Reloading complete"

// TestActivationOnDistributionCorefiles: for each Corefile a distribution
// ships, unchanged but for pointing it at loopback (e2e.LocalCorefile), our
// image activates hairpin by itself:
//  0. before any target, the plugin is inert: the public answer;
//  1. a target is created, and an Ingress host of its class answers with
//     the target's ClusterIP;
//  2. the stock Corefile is written again (a distribution's re-render) and
//     CoreDNS reloads (SIGUSR1): the reloaded server runs the same activated
//     configuration, and the host still answers with the target;
//  3. the target is deleted, and the public answer returns.
func TestActivationOnDistributionCorefiles(t *testing.T) {
	ctx, env := newDistributionEnv(t, 5*time.Minute)
	cp, coredns, lb, upstream := env.cp, env.coredns, env.lb, env.upstream

	for _, name := range e2e.Distributions {
		t.Run(name, func(t *testing.T) {
			d := startDistributionDNS(ctx, t, coredns, name, upstream, cp)
			logLine := "[INFO] plugin/hairpin: activated in server block .:" + strconv.Itoa(harness.PortOf(t, d.listen)) +
				" with the kubernetes plugin's kubeconfig " + cp.Kubeconfig +
				" (it holds kubernetes; the Corefile names no hairpin); -hairpin.activate=false turns this off"
			if !strings.Contains(d.proc.Output(), logLine) {
				t.Fatalf("the startup log does not say %q:\n%s", logLine, d.proc.Output())
			}

			host := name + "-activation." + e2e.Zone
			createIngress(ctx, t, cp, "activation-"+name, host)
			answers(ctx, t, d.listen, host, lb, "0. no target yet: the public answer")

			ip, deleteTarget := createTarget(ctx, t, cp, "activation-"+name)
			answers(ctx, t, d.listen, host, ip, "1. a target of class nginx: its ClusterIP")

			harness.WriteFile(t, filepath.Dir(d.path), filepath.Base(d.path), d.corefile)
			if err := d.proc.Signal(syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
			waitReloaded(ctx, t, d.proc)
			// The old instance is stopped now: the answer comes from the
			// configuration loaded again from the stock Corefile, which has
			// hairpin only if the loader activated it again.
			answers(ctx, t, d.listen, host, ip, "2. after the stock Corefile is reloaded: still the target")

			deleteTarget()
			answers(ctx, t, d.listen, host, lb, "3. target deleted: the public answer again")
		})
	}
}

// TestActivationOffLeavesTheCorefileAsWritten: with COREDNS_HAIRPIN_ACTIVATE
// =false the same image and Corefile do not answer for a target: it is the
// activation, not something else, that makes the test above pass.
func TestActivationOffLeavesTheCorefileAsWritten(t *testing.T) {
	ctx, env := newDistributionEnv(t, 2*time.Minute)
	cp, coredns, lb, upstream := env.cp, env.coredns, env.lb, env.upstream
	d := startDistributionDNS(ctx, t, coredns, "kubeadm", upstream, cp, "COREDNS_HAIRPIN_ACTIVATE=false")
	if want := "[INFO] plugin/hairpin: activation is off"; !strings.Contains(d.proc.Output(), want) {
		t.Fatalf("the startup log does not say %q:\n%s", want, d.proc.Output())
	}

	host, target := "activation-off."+e2e.Zone, "activation-off"
	createIngress(ctx, t, cp, "activation-off", host)
	createTarget(ctx, t, cp, target)
	// A control that sees the target: the same Corefile with activation on.
	on := startDistributionDNS(ctx, t, coredns, "kubeadm", upstream, cp)
	ip := targetIP(ctx, t, cp, target)
	answers(ctx, t, on.listen, host, ip, "activation on: the target")
	wantAddrs(t, "activation off: the public answer", digA(ctx, t, d.listen, host), lb)
}

var deleteNow = metav1.DeleteOptions{GracePeriodSeconds: new(int64)}

// waitReloaded waits until the server has restarted with the Corefile
// loaded again.
func waitReloaded(ctx context.Context, t *testing.T, p *harness.Process) {
	t.Helper()
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := harness.Poll(wait, func(context.Context) error {
		if !strings.Contains(p.Output(), reloaded) {
			return fmt.Errorf("no %q in the log yet", reloaded)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reload: %v\n%s", err, p.Output())
	}
}

// createIngress creates an Ingress of class nginx for host in ns, and
// deletes ns when t ends.
func createIngress(ctx context.Context, t *testing.T, cp *harness.ControlPlane, ns, host string) {
	t.Helper()
	if _, err := e2e.CreateIngress(ctx, cp, ns, "app", host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Clientset.CoreV1().Namespaces().Delete(context.Background(), ns, deleteNow) })
}

// createTarget creates the distribution target name (e2e.CreateDistributionTarget)
// and returns its ClusterIP and the step that deletes it; a target the test
// has not deleted is deleted when t ends.
func createTarget(ctx context.Context, t *testing.T, cp *harness.ControlPlane, name string) (netip.Addr, func()) {
	t.Helper()
	ip, err := e2e.CreateDistributionTarget(ctx, cp, name)
	if err != nil {
		t.Fatal(err)
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_ = e2e.DeleteTarget(context.Background(), cp, name)
		}
	})
	return ip, func() {
		t.Helper()
		if err := e2e.DeleteTarget(ctx, cp, name); err != nil {
			t.Fatal(err)
		}
		deleted = true
	}
}

// targetIP returns the ClusterIP of target Service name.
func targetIP(ctx context.Context, t *testing.T, cp *harness.ControlPlane, name string) netip.Addr {
	t.Helper()
	svc, err := cp.Clientset.CoreV1().Services(e2e.ProxyNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil {
		t.Fatal(err)
	}
	return ip
}
