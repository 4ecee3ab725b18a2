package dataplane_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/dataplane"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
)

// The steps that the stories on different clusters tell alike, each for
// the cluster's controllers ics.

// brokenWithoutHairpin: each host resolves to its public address, an
// outside client gets through the load balancer, and the client Pods (with
// their own network namespace and in the node's) fail the hairpin way: the
// controller closes the headerless connection (curl's empty reply, 52, or
// a reset, 56; never a timeout or a DNS failure) and logs a new "broken
// header" entry for that try.
func brokenWithoutHairpin(ctx context.Context, t *testing.T, e *dataplane.Env, ics []cluster.IngressController) {
	t.Helper()
	for _, ic := range ics {
		host := ic.Hosts[0]
		if err := e.WaitResolves(ctx, host, ic.LBIP); err != nil {
			t.Fatalf("the cluster DNS must give the public answer first: %v", err)
		}
		// From the internet, through HAProxy's send-proxy, it works;
		// once it does, the dataplane has the controller's endpoints.
		body, err := e.WaitServedFromOutside(ctx, ic, host)
		if err != nil || !strings.Contains(body, "client="+cluster.ExternalClientIP.String()) {
			t.Fatalf("outside client through the load balancer: %q, %v", body, err)
		}
		for _, pod := range []string{dataplane.ClientPod, dataplane.HostClientPod} {
			shortCircuited(ctx, t, e, ic, pod, "http://"+host+"/")
		}
	}
}

// shortCircuited runs curl with args in the client Pod pod, to an address
// of ic that the dataplane short-circuits, and holds the try to the
// dataplane's row for that client: curl's empty reply or reset (52, 56;
// never a timeout or a DNS failure), and a new "broken header" entry in
// ic's log naming the address the dataplane gives that client
// (Env.SourceSeen: the Pod's own, the node's, or masqueraded).
func shortCircuited(ctx context.Context, t *testing.T, e *dataplane.Env, ic cluster.IngressController, pod string, args ...string) {
	t.Helper()
	backends, err := controllerPodIPs(ctx, e, ic)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, b := range backends {
		a, err := e.SourceSeen(pod, true, b)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, a.String())
	}
	before, err := e.ErrorLog(ctx, ic)
	if err != nil {
		t.Fatal(err)
	}
	code, out, err := e.CurlExitFrom(ctx, pod, args...)
	if err != nil {
		t.Fatal(err)
	}
	if code != 52 && code != 56 {
		t.Fatalf("curl %v from the %s pod (short-circuited to %s) exited %d; want 52 or 56, the controller closing the headerless connection: %q", args, pod, ic.Namespace, code, out)
	}
	var fresh []string
	if err := harness.Poll(ctx, func(ctx context.Context) error {
		log, err := e.ErrorLog(ctx, ic)
		if err != nil {
			return err
		}
		fresh = brokenHeaders(strings.TrimPrefix(log, before), "")
		if !slices.ContainsFunc(fresh, func(entry string) bool {
			return slices.ContainsFunc(want, func(a string) bool { return strings.Contains(entry, "client: "+a+",") })
		}) {
			return fmt.Errorf("no new broken header entry naming %v", want)
		}
		return nil
	}); err != nil {
		t.Fatalf("%s's log after the %s pod's try: %v; new entries: %q", ic.Namespace, pod, err, fresh)
	}
	t.Logf("%s pod -> %s: curl exit %d, seen as %v", pod, ic.Namespace, code, want)
}

// brokenHeaders returns the entries of an nginx error log that say "broken
// header" for client addr (for any client when addr is ""). An entry starts
// with nginx's timestamp and runs over several lines when the header it
// quotes does (a request's lines), and ends ", client: ADDR, server: ...".
func brokenHeaders(log, addr string) []string {
	var entries []string
	for _, l := range strings.Split(log, "\n") {
		if nginxEntry.MatchString(l) || len(entries) == 0 {
			entries = append(entries, l)
			continue
		}
		entries[len(entries)-1] += "\n" + l
	}
	var out []string
	for _, e := range entries {
		if strings.Contains(e, "broken header") && (addr == "" || strings.Contains(e, "client: "+addr+",")) {
			out = append(out, e)
		}
	}
	return out
}

// nginxEntry is the start of an nginx error log entry: its timestamp.
var nginxEntry = regexp.MustCompile(`^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2} \[`)

// checkFailsNamingEveryController: before the install the check fails,
// names every controller's class, and names the dataplane as it is.
func checkFailsNamingEveryController(ctx context.Context, t *testing.T, e *dataplane.Env, ics []cluster.IngressController) {
	t.Helper()
	r := check(ctx, t, e)
	if r.Exit != 1 {
		t.Errorf("kubectl hairpin check exited %d before the install; want 1\n%s", r.Exit, r.Table)
	}
	fails := r.Failed("ingress-class-target")
	for _, ic := range ics {
		if !dataplane.Mentions(fails, ic.Class) {
			t.Errorf("no failed ingress-class-target names class %s: %+v\n%s", ic.Class, fails, r.Table)
		}
	}
	checkNamesTheDataplane(t, r, e.Capabilities(), ics)
}

// checkNamesTheDataplane fails t unless the check's report names the
// dataplane of caps as it really is (Cilium with its version, as kube-proxy
// replacement, read from cilium-config and the agent's DaemonSet; else
// kube-proxy), and says for each of ics that it short-circuits its
// address (an externalIP, or a LoadBalancer IP of ipMode VIP).
func checkNamesTheDataplane(t *testing.T, r *dataplane.CheckReport, caps cluster.Capabilities, ics []cluster.IngressController) {
	t.Helper()
	dp, who := "the Service dataplane is kube-proxy v", "kube-proxy short-circuits"
	if caps.KubeProxyReplacement {
		dp, who = "the Service dataplane is Cilium "+caps.Version+" as kube-proxy replacement", "Cilium (kube-proxy replacement) short-circuits"
	}
	if ok := r.Passed("dataplane"); len(ok) != 1 || !strings.HasPrefix(ok[0].Message, dp) || !strings.Contains(r.Table, dp) {
		t.Errorf("the check's dataplane line: %+v; want it to start %q\n%s", ok, dp, r.Table)
	}
	for _, ic := range ics {
		how := "(ipMode: VIP)" // as MetalLB writes it
		if ic.ExternalIP {
			how = "(externalIPs)"
		}
		want := fmt.Sprintf("%s %s/%s %s %s", who, ic.Namespace, ic.Service(), ic.LBIP, how)
		if !dataplane.Mentions(r.Passed("lb-status"), want) || !strings.Contains(r.Table, want) {
			t.Errorf("no lb-status line says %q\n%s", want, r.Table)
		}
	}
}

// fixedEachHostReachesItsOwnController: after the install every kube-dns
// replica answers each host with its target, and the client Pods reach the
// host's own controller, never another one, with the PROXY header
// naming the client.
func fixedEachHostReachesItsOwnController(ctx context.Context, t *testing.T, e *dataplane.Env, ics []cluster.IngressController) {
	t.Helper()
	for _, ic := range ics {
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
		// From the node too: the socket-LB path of Cilium is fixed
		// as well (the controller answers only with a PROXY header).
		body, err := e.WaitCurlFrom(ctx, dataplane.HostClientPod, "http://"+host+"/")
		if err != nil || !strings.Contains(body, "controller="+ic.Namespace) {
			t.Fatalf("http://%s from the hostNetwork client: %q, %v; want controller=%s", host, body, err, ic.Namespace)
		}
		if _, err := e.WaitRequest(ctx, ic, host, e.ClientIP()); err != nil {
			t.Errorf("no request from the client pod: %v", err)
		}
		// The hostNetwork client's request names the node as the proxy
		// saw it: the dataplane's row for the node and a ClusterIP.
		if err := requestFromTheNode(ctx, e, ic, host); err != nil {
			t.Error(err)
		}
		for _, other := range ics {
			if other.Namespace == ic.Namespace {
				continue
			}
			if reqs, _ := e.Requests(ctx, other, host); len(reqs) > 0 {
				t.Errorf("%s's host reached the other controller %s: %+v", host, other.Namespace, reqs)
			}
		}
	}
}

// checkPassesAfterInstall waits until the check passes, as CoreDNS's
// metrics follow the install within its watch events, and returns it.
func checkPassesAfterInstall(ctx context.Context, t *testing.T, e *dataplane.Env) *dataplane.CheckReport {
	t.Helper()
	var r *dataplane.CheckReport
	if err := harness.Poll(ctx, func(ctx context.Context) error {
		r = check(ctx, t, e)
		if r.Exit != 0 {
			return fmt.Errorf("exit %d", r.Exit)
		}
		return nil
	}); err != nil {
		t.Fatalf("kubectl hairpin check after the install: %v\n%s", err, r.Table)
	}
	return r
}

// uninstallRestoresThePublicAnswers uninstalls the chart, waits until each
// host resolves to its public address again, and until nothing of the
// chart is left.
func uninstallRestoresThePublicAnswers(ctx context.Context, t *testing.T, e *dataplane.Env, ics []cluster.IngressController) {
	t.Helper()
	if out, err := e.Uninstall(ctx); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	for _, ic := range ics {
		if err := e.WaitResolves(ctx, ic.Hosts[0], ic.LBIP); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.WaitNothingLeft(ctx); err != nil {
		t.Fatal(err)
	}
}

// translatedWhereTheDataplaneSays connects the client Pod and the
// hostNetwork client to addr, an address the dataplane short-circuits to a
// controller in backends, and holds each socket's peer to where the
// dataplane translates that client's connections. Translated per packet
// (kube-proxy's DNAT, Cilium's bpf_lxc on the Pod's veth), a socket keeps
// addr as its peer; translated at connect (Cilium's bpf_sock), it is
// connected to the backend itself.
func translatedWhereTheDataplaneSays(ctx context.Context, t *testing.T, e *dataplane.Env, addr netip.AddrPort, backends []netip.Addr) {
	t.Helper()
	caps := e.Capabilities()
	for _, c := range []struct {
		pod       string
		atConnect bool
	}{
		{dataplane.ClientPod, caps.SocketLBInPods},
		{dataplane.HostClientPod, caps.SocketLBInNode},
	} {
		peer, err := e.ConnectedPeer(ctx, c.pod, addr)
		switch {
		case err != nil:
			t.Errorf("%s's socket to %s: %v", c.pod, addr, err)
		case c.atConnect && !slices.Contains(backends, peer.Addr()):
			t.Errorf("%s's socket to %s has the peer %s; want a controller pod %v (translated at connect)", c.pod, addr, peer, backends)
		case !c.atConnect && peer != addr:
			t.Errorf("%s's socket to %s has the peer %s; want %s itself (translated per packet)", c.pod, addr, peer, addr)
		}
	}
}

// requestFromTheNode waits for ic's access-log entry of a request for host
// from the hostNetwork client, whose PROXY header gives the address the
// proxy saw for it: one of the dataplane's rows for the node's connection
// to a target's ClusterIP, whichever proxy Pod took it.
func requestFromTheNode(ctx context.Context, e *dataplane.Env, ic cluster.IngressController, host string) error {
	pods, err := e.CP.Clientset.CoreV1().Pods(dataplane.TargetNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range pods.Items {
		backend, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil {
			continue
		}
		seen, err := e.SourceSeen(dataplane.HostClientPod, false, backend)
		if err != nil {
			return err
		}
		_, err = e.WaitRequest(ctx, ic, host, seen)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("no request from the hostNetwork client as the proxy saw it: %w", errors.Join(errs...))
}

// brokenAndTranslated is the broken step of a cluster whose controllers
// ics are Cozystack's: [brokenWithoutHairpin], and the clients' sockets to
// the first controller's address held to where the dataplane translates
// them ([translatedWhereTheDataplaneSays]).
func brokenAndTranslated(ctx context.Context, t *testing.T, e *dataplane.Env, ics []cluster.IngressController) {
	t.Helper()
	brokenWithoutHairpin(ctx, t, e, ics)
	backends, err := controllerPodIPs(ctx, e, ics[0])
	if err != nil {
		t.Fatal(err)
	}
	translatedWhereTheDataplaneSays(ctx, t, e, netip.AddrPortFrom(ics[0].LBIP, 80), backends)
}

// installExample installs the chart with the values file
// examples/name as written, and flags (the zones, say).
func installExample(ctx context.Context, t *testing.T, e *dataplane.Env, name string, flags ...string) {
	t.Helper()
	if out, err := installExampleValues(ctx, t, e, name, flags...); err != nil {
		t.Fatalf("helm install -f examples/%s %v: %v\n%s", name, flags, err, out)
	}
}

// installExampleValues is installExample, returning what helm said.
func installExampleValues(ctx context.Context, t testing.TB, e *dataplane.Env, name string, flags ...string) (string, error) {
	values, err := os.ReadFile(filepath.Join(e.Chart, "examples", name))
	if err != nil {
		return "", err
	}
	return e.InstallValues(ctx, t, string(values), flags...)
}
