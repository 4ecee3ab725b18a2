package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/dataplane"
	"github.com/coredns-hairpin/hairpin/test/harness"
	dpcluster "github.com/coredns-hairpin/hairpin/test/harness/cluster"
	"github.com/coredns-hairpin/hairpin/test/harness/netns"
	"github.com/coredns-hairpin/hairpin/test/harness/userns"
)

// envDataplane picks the demo's dataplane: "cilium" for Cilium as
// kube-proxy replacement, which needs real root (BPF); otherwise kube-proxy
// in nftables mode.
const envDataplane = "DEMO_DATAPLANE"

// demoDataplane is the dataplane mode the demo runs: DEMO_DATAPLANE, or
// nftables.
func demoDataplane() string {
	if m := os.Getenv(envDataplane); m != "" {
		return m
	}
	return "nftables"
}

// dataplaneUnavailable says why the demo cannot run on the real dataplane
// here, or "" when it can: it needs root (network namespaces) and
// kube-proxy's tools, and for Cilium real root.
func dataplaneUnavailable() string {
	dp, err := dpcluster.DataplaneNamed(demoDataplane())
	if err != nil {
		return fmt.Sprintf("%s=%q is not a dataplane; want one of %v", envDataplane, demoDataplane(), dpcluster.AllDataplanes)
	}
	if len(dp.Capabilities().BPFPrograms) > 0 && (os.Geteuid() != 0 || userns.Inside()) {
		return "the " + dp.Name() + " dataplane's BPF datapath needs real root, not a user namespace (" + envDataplane + "=" + dp.Name() + ")"
	}
	if os.Geteuid() != 0 {
		why := "the real dataplane needs network namespaces: root, or an unprivileged user namespace"
		if usernsErr != nil {
			why += " (" + usernsErr.Error() + ")"
		}
		return why
	}
	if usernsErr != nil {
		return "the user namespace could not be set up: " + usernsErr.Error()
	}
	for _, tool := range []string{"ip", "iptables", "nft", dpcluster.HAProxy} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("%s is not installed (make deps)", tool)
		}
	}
	n, err := netns.New("probe")
	if err != nil {
		return fmt.Sprintf("cannot create a network namespace: %v", err)
	}
	_ = n.Close()
	return ""
}

// runDataplane tells the story on the real dataplane: kube-proxy, a
// LoadBalancer IP short-circuited inside the node, HAProxy send-proxy
// outside, every Pod a process in its own network namespace.
func (st *story) runDataplane(ctx context.Context, t testing.TB) error {
	mode := demoDataplane()
	dp, err := dpcluster.DataplaneNamed(mode)
	if err != nil {
		return err
	}
	proxy := "kube-proxy (" + mode + ")"
	if dp.Capabilities().KubeProxyReplacement {
		proxy = dp.Capabilities().Agent + " (kube-proxy replacement)"
	}
	st.header("The cluster: one node with a real dataplane (" + proxy + "), on this machine")
	start := time.Now()
	e := dataplane.Start(t, mode, "kubeadm")
	st.dp = e
	st.helm = e.Helm
	n := e.Nodes[0]
	st.linef("node %s  %s in network namespace %s: etcd, kube-apiserver, kube-controller-manager,", n.Name, n.IP, e.NodeNS.Name)
	st.linef("                         kube-scheduler, %s; Pods %s, Services %s", proxy, n.PodCIDR, dpcluster.ServiceCIDR)
	st.linef("outside                  %s: the public DNS %s and the load balancer, HAProxy send-proxy", e.Outside.Name, dpcluster.PublicDNSIP)
	st.linef("                         on each LoadBalancer IP in front of the NodePorts")
	st.linef("up in %s", time.Since(start).Round(100*time.Millisecond))
	st.linef("")
	st.note("kubectl lines are answered by the demo from the apiserver (client-go); dig and curl are the")
	st.note("real ones, run inside the client Pod's network namespace; helm is the real one.")
	st.cmd("export KUBECONFIG=%s", e.CP.Kubeconfig)
	if err := st.getPods(ctx, ""); err != nil {
		return err
	}
	st.cmd("kubectl get svc -A --field-selector spec.type=LoadBalancer")
	if err := st.lbServices(ctx); err != nil {
		return err
	}
	for _, step := range []func(context.Context, testing.TB) error{st.dpBroken, st.dpInstall, st.dpFixed, st.dpRerender} {
		if err := step(ctx, t); err != nil {
			return err
		}
	}
	if st.keep {
		st.kept = true
		st.header("The cluster keeps running (DEMO_KEEP=1): Enter uninstalls (step 5), Ctrl-C stops")
		st.linef("export KUBECONFIG=%s", e.CP.Kubeconfig)
		st.linef("ip netns exec %s bash   # a shell on the node: iptables-save, nft list ruleset, ...", e.NodeNS.Name)
		wait := st.wait
		if wait == nil {
			wait = waitEnter
		}
		if !wait(ctx) {
			return nil
		}
	}
	return st.dpUninstall(ctx, t)
}

// exec runs cmd in the client Pod as `kubectl exec` would, prints both, and
// returns stdout and the error.
func (st *story) exec(ctx context.Context, cmd ...string) (string, error) {
	st.cmd("kubectl exec client -- %s", strings.Join(cmd, " "))
	out, errOut, err := st.dp.Nodes[0].Exec(ctx, "default", "client", "client", cmd...)
	st.block(strings.TrimRight(out+errOut, "\n"))
	if err != nil {
		st.block(fmt.Sprintf("command terminated: %v", err))
	}
	return out, err
}

func (st *story) dpBroken(ctx context.Context, _ testing.TB) error {
	e := st.dp
	ic := dataplane.Controllers[0]
	host := ic.Hosts[0]
	st.header("1. Broken: a Pod calls the cluster's own public hostname")
	st.note("kube-dns runs our CoreDNS image with kubeadm's stock Corefile: no hairpin line, no target yet.")
	if _, err := st.exec(ctx, "dig", "+short", host); err != nil {
		return err
	}
	if err := e.WaitResolves(ctx, host, ic.LBIP); err != nil {
		return err
	}
	// Not shown: kube-proxy must have the controller's endpoints first.
	if _, err := e.WaitServedFromOutside(ctx, ic, host); err != nil {
		return err
	}
	if e.Capabilities().KubeProxyReplacement {
		st.note("Cilium (kube-proxy replacement) owns that LoadBalancer IP inside the node: bpf_lxc on the Pod's")
		st.note("veth sends the connection straight to the controller, past HAProxy, so no PROXY header is written:")
	} else {
		st.note("kube-proxy owns that LoadBalancer IP inside the node and sends the connection straight to the")
		st.note("controller, past HAProxy, so no PROXY header is written:")
	}
	if _, err := st.exec(ctx, "curl", "-sS", "--max-time", "5", "http://"+host+"/"); err == nil {
		return fmt.Errorf("the client reached %s through the short-circuited LoadBalancer IP", host)
	}
	var line string
	if err := harness.Poll(ctx, func(ctx context.Context) error {
		log, err := e.ErrorLog(ctx, ic)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "broken header") {
				line = l
				return nil
			}
		}
		return fmt.Errorf("no broken header logged yet")
	}); err != nil {
		return err
	}
	st.cmd("kubectl logs -n %s deploy/%s | grep 'broken header'", ic.Namespace, dpcluster.ControllerService)
	st.block(line)
	st.note("From the internet it works: HAProxy adds the header and the controller sees the real client.")
	st.cmd("curl http://%s/   # from %s, outside", host, dpcluster.ExternalClientIP)
	body, err := e.Cluster.Curl(ctx, "http://"+host+"/")
	st.block(strings.TrimRight(body, "\n"))
	if err != nil {
		return err
	}
	st.note("Our kubectl plugin says what is wrong and what to do:")
	return st.check(ctx, 1)
}

// check runs `kubectl hairpin check`, prints its table, and fails unless it
// exited with want.
func (st *story) check(ctx context.Context, want int) error {
	st.cmd("kubectl hairpin check")
	r, err := st.dp.Check(ctx)
	if err != nil {
		return err
	}
	st.block(strings.TrimRight(r.Table, "\n"))
	st.block(fmt.Sprintf("(exit code %d)", r.Exit))
	if r.Exit != want {
		return fmt.Errorf("kubectl hairpin check exited %d, want %d", r.Exit, want)
	}
	return nil
}

func (st *story) dpInstall(ctx context.Context, t testing.TB) error {
	e := st.dp
	st.header("2. Install: our chart, one target per controller")
	st.cmd("cat values.yaml")
	st.block(dataplane.Values())
	st.cmd("helm install hairpin %s -n %s --create-namespace -f values.yaml --wait", chartPath, dataplane.TargetNamespace)
	out, err := e.Install(ctx, t)
	st.block(firstLines(out, 8))
	if err != nil {
		return fmt.Errorf("helm install: %w", err)
	}
	return st.getPods(ctx, dataplane.TargetNamespace)
}

func (st *story) dpFixed(ctx context.Context, _ testing.TB) error {
	e := st.dp
	st.header("3. Fixed: each host goes to its own target, and reaches its own controller")
	for _, ic := range dataplane.Controllers {
		host := ic.Hosts[0]
		target, err := e.TargetIP(ctx, ic)
		if err != nil {
			return err
		}
		if err := e.WaitResolves(ctx, host, target); err != nil {
			return err
		}
		if _, err := st.exec(ctx, "dig", "+short", host); err != nil {
			return err
		}
		st.note(fmt.Sprintf("%s is the ClusterIP of target %s/%s.", target, dataplane.TargetNamespace, ic.Namespace))
		// Not shown: the target's endpoints may wait for kube-proxy's sync.
		if _, err := e.WaitCurl(ctx, "https://"+host+"/"); err != nil {
			return err
		}
		body, err := st.exec(ctx, "curl", "-sS", "-k", "--max-time", "5", "https://"+host+"/")
		if err != nil {
			return err
		}
		want := fmt.Sprintf("client=%s controller=%s", e.ClientIP(), ic.Namespace)
		if !strings.Contains(body, want) {
			return fmt.Errorf("%s answered %q, want %q", host, body, want)
		}
		last, err := e.WaitRequest(ctx, ic, host, e.ClientIP())
		if err != nil {
			return err
		}
		st.cmd("kubectl logs -n %s deploy/%s | tail -n 1", ic.Namespace, dpcluster.ControllerService)
		st.block(fmt.Sprintf(`{"proxy_protocol_addr":"%s","host":"%s","request":"%s","status":"%s"}`, last.ProxyProtocolAddr, last.Host, last.Request, last.Status))
	}
	st.note("The PROXY header carries the client Pod's own address; TLS passed through untouched.")
	return harness.Poll(ctx, func(ctx context.Context) error {
		r, err := e.Check(ctx)
		if err != nil || r.Exit != 0 {
			return fmt.Errorf("kubectl hairpin check not clean yet: %v", err)
		}
		return st.check(ctx, 0)
	})
}

func (st *story) dpRerender(ctx context.Context, _ testing.TB) error {
	e := st.dp
	st.header("4. Survives a re-render: an operator's edit, then kubeadm's stock Corefile again")
	ic := dataplane.Controllers[1]
	target, err := e.TargetIP(ctx, ic)
	if err != nil {
		return err
	}
	for _, edit := range []struct{ cmd, note, text string }{
		{"kubectl -n kube-system edit configmap coredns   # adds `log` after `errors`",
			"The node swaps the mounted file (..data); CoreDNS's reload plugin notices within 30 s (±15 s).", e.OperatorEdit()},
		{"kubeadm init phase addon coredns   # the re-render: the stock Corefile again",
			"Reloaded again: our image activates hairpin in the new server block by itself.", e.Corefile},
	} {
		st.cmd("%s", edit.cmd)
		st.block("configmap/coredns edited")
		st.note(edit.note)
		start := time.Now()
		if err := e.ApplyAndReload(ctx, edit.text); err != nil {
			return err
		}
		st.cmd("kubectl logs -n kube-system -l k8s-app=kube-dns | grep Reloading")
		st.block(fmt.Sprintf("[INFO] Reloading complete   (every replica, %s after the edit)", time.Since(start).Round(time.Second)))
		if err := e.WaitResolves(ctx, ic.Hosts[0], target); err != nil {
			return err
		}
		if _, err := st.exec(ctx, "dig", "+short", ic.Hosts[0]); err != nil {
			return err
		}
	}
	return nil
}

func (st *story) dpUninstall(ctx context.Context, _ testing.TB) error {
	e := st.dp
	st.header("5. Uninstall: the public answers return, nothing of ours is left")
	st.cmd("helm uninstall hairpin -n %s --wait", dataplane.TargetNamespace)
	out, err := e.Uninstall(ctx)
	st.block(strings.TrimRight(out, "\n"))
	if err != nil {
		return err
	}
	for _, ic := range dataplane.Controllers {
		if err := e.WaitResolves(ctx, ic.Hosts[0], ic.LBIP); err != nil {
			return err
		}
	}
	if _, err := st.exec(ctx, "dig", "+short", dataplane.Controllers[0].Hosts[0]); err != nil {
		return err
	}
	if err := e.WaitNothingLeft(ctx); err != nil {
		return err
	}
	st.cmd("kubectl get all -n %s", dataplane.TargetNamespace)
	st.block("No resources found in " + dataplane.TargetNamespace + " namespace.")
	return nil
}

// getPods prints `kubectl get pods -o wide` of ns ("" for every namespace).
func (st *story) getPods(ctx context.Context, ns string) error {
	if ns == "" {
		st.cmd("kubectl get pods -A -o wide")
	} else {
		st.cmd("kubectl get pods -n %s -o wide", ns)
	}
	pods, err := st.dp.CP.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	rows := [][]string{{"NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "IP", "NODE"}}
	for _, p := range pods.Items {
		ready, restarts := 0, int32(0)
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready {
				ready++
			}
			restarts += cs.RestartCount
		}
		rows = append(rows, []string{p.Namespace, p.Name, fmt.Sprintf("%d/%d", ready, len(p.Spec.Containers)), string(p.Status.Phase), fmt.Sprint(restarts), p.Status.PodIP, p.Spec.NodeName})
	}
	st.table(rows)
	return nil
}

// lbServices prints the LoadBalancer Services with their external IPs.
func (st *story) lbServices(ctx context.Context) error {
	svcs, err := st.dp.CP.Clientset.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	rows := [][]string{{"NAMESPACE", "NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)"}}
	for _, s := range svcs.Items {
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		var ext, ports []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			ext = append(ext, in.IP)
		}
		for _, p := range s.Spec.Ports {
			ports = append(ports, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol))
		}
		rows = append(rows, []string{s.Namespace, s.Name, string(s.Spec.Type), s.Spec.ClusterIP, strings.Join(ext, ","), strings.Join(ports, ",")})
	}
	st.table(rows)
	return nil
}

// table prints rows in kubectl's aligned columns.
func (st *story) table(rows [][]string) {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	w.Flush()
	st.block(b.String())
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
