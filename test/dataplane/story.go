package dataplane

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
)

// TargetNamespace is where the chart is installed and its targets live.
const TargetNamespace = "hairpin-system"

// TargetIP returns the ClusterIP of the target Service the chart renders
// for ic: the one target whose Ingress classes hold ic's, whatever the
// values named it (Values names it after ic's namespace, Cozystack's
// tenant example ingress-nginx).
func (e *Env) TargetIP(ctx context.Context, ic cluster.IngressController) (netip.Addr, error) {
	svcs, err := e.CP.Clientset.CoreV1().Services(TargetNamespace).List(ctx, metav1.ListOptions{LabelSelector: e2e.TargetLabel})
	if err != nil {
		return netip.Addr{}, err
	}
	var fronting []string
	for _, svc := range svcs.Items {
		for _, c := range strings.Split(svc.Annotations[e2e.IngressClassesAnnotation], ",") {
			if strings.TrimSpace(c) == ic.Class {
				fronting = append(fronting, svc.Name)
			}
		}
	}
	if len(fronting) != 1 {
		return netip.Addr{}, fmt.Errorf("targets of class %s in %s: %v; want one", ic.Class, TargetNamespace, fronting)
	}
	return e.TargetIPOf(ctx, fronting[0])
}

// TargetIPOf returns the ClusterIP of the chart's target Service name.
func (e *Env) TargetIPOf(ctx context.Context, name string) (netip.Addr, error) {
	svc, err := e.CP.Clientset.CoreV1().Services(TargetNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return netip.Addr{}, err
	}
	return netip.ParseAddr(svc.Spec.ClusterIP)
}

// WaitResolves waits until host resolves, from the client Pod, to exactly
// want at every replica of kube-dns: the Service balances queries over them,
// so one replica that still answers otherwise would make any later request
// a coin toss.
func (e *Env) WaitResolves(ctx context.Context, host string, want netip.Addr) error {
	var last string
	err := harness.PollEvery(ctx, 100*time.Millisecond, func(ctx context.Context) error {
		servers, err := e.dnsReplicas(ctx)
		if err != nil {
			return err
		}
		for _, server := range servers {
			got, err := e.ResolveAt(ctx, server, host)
			if err != nil {
				return err
			}
			if len(got) != 1 || got[0] != want {
				last = fmt.Sprintf("%v from %s", got, server)
				return fmt.Errorf("%s resolves to %s", host, last)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: want %s, last answer %s: %w", host, want, last, err)
	}
	return nil
}

// WaitAnswered waits, querying every kube-dns replica from inside the node
// every 10 ms, until each answers host's A query with exactly want, and
// returns when that first held. It measures how soon a change is served:
// a query from the node costs no exec into a Pod.
func (e *Env) WaitAnswered(ctx context.Context, host string, want netip.Addr) (time.Time, error) {
	var last string
	var at time.Time
	err := harness.PollEvery(ctx, 10*time.Millisecond, func(ctx context.Context) error {
		servers, err := e.dnsReplicas(ctx)
		if err != nil {
			return err
		}
		for _, server := range servers {
			r, err := e.NodeExchange(ctx, netip.AddrPortFrom(server, 53).String(), host, dns.TypeA)
			if err != nil {
				return err
			}
			got := harness.ARecords(r)
			if len(got) != 1 || got[0] != want {
				last = fmt.Sprintf("%v from %s", got, server)
				return fmt.Errorf("%s resolves to %s", host, last)
			}
		}
		at = time.Now()
		return nil
	})
	if err != nil {
		return at, fmt.Errorf("%s: want %s, last answer %s: %w", host, want, last, err)
	}
	return at, nil
}

// dnsReplicas returns the addresses of kube-dns's ready endpoints.
func (e *Env) dnsReplicas(ctx context.Context) ([]netip.Addr, error) {
	pods, err := e.CP.Clientset.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	for _, p := range pods.Items {
		if a, err := netip.ParseAddr(p.Status.PodIP); err == nil && p.DeletionTimestamp == nil {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("kube-dns has no pods")
	}
	return addrs, nil
}

// Requests returns the controller's access-log entries for host.
func (e *Env) Requests(ctx context.Context, ic cluster.IngressController, host string) ([]harness.AccessLogEntry, error) {
	all, err := e.AccessLog(ctx, ic)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(a harness.AccessLogEntry) bool { return a.Host != host }), nil
}

// WaitServedFromOutside waits until an outside client reaches ic's
// controller for host through the load balancer, and returns the body.
// That path goes through the NodePort, which kube-proxy programs in the
// same sync as the LoadBalancer IP: a Deployment can be available before
// kube-proxy has its endpoints, and a Pod's connection to the LB IP then
// fails before it reaches the controller.
func (e *Env) WaitServedFromOutside(ctx context.Context, ic cluster.IngressController, host string) (string, error) {
	var body string
	err := harness.Poll(ctx, func(ctx context.Context) error {
		out, err := e.Cluster.Curl(ctx, "http://"+host+"/")
		body = out
		if err != nil || !strings.Contains(out, "controller="+ic.Namespace) {
			return fmt.Errorf("outside client through the load balancer: %q, %v", out, err)
		}
		return nil
	})
	return body, err
}

// WaitRequest returns the last of the controller's access-log entries for
// host whose PROXY header named client, waiting up to 10 s for it: nginx
// writes the line after the response has left, and the container's log is
// read from a pipe, so the line can trail the client's exit.
func (e *Env) WaitRequest(ctx context.Context, ic cluster.IngressController, host string, client netip.Addr) (harness.AccessLogEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var found harness.AccessLogEntry
	var seen []harness.AccessLogEntry
	err := harness.Poll(ctx, func(ctx context.Context) error {
		reqs, err := e.Requests(ctx, ic, host)
		if err != nil {
			return err
		}
		seen = reqs
		for _, r := range slices.Backward(reqs) {
			if r.ProxyProtocolAddr == client.String() {
				found = r
				return nil
			}
		}
		return fmt.Errorf("no request for %s from %s", host, client)
	})
	if err != nil {
		return found, fmt.Errorf("%s's access log: %w; entries for %s: %+v", ic.Namespace, err, host, seen)
	}
	return found, nil
}

// SetIPMode writes ipMode into the status of ic's LoadBalancer Service, as
// a cloud controller manager whose load balancer proxies does.
func (e *Env) SetIPMode(ctx context.Context, ic cluster.IngressController, mode corev1.LoadBalancerIPMode) error {
	svcs := e.CP.Clientset.CoreV1().Services(ic.Namespace)
	svc, err := svcs.Get(ctx, cluster.ControllerService, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if len(svc.Status.LoadBalancer.Ingress) == 0 {
		return fmt.Errorf("%s/%s has no LoadBalancer status", ic.Namespace, cluster.ControllerService)
	}
	svc.Status.LoadBalancer.Ingress[0].IPMode = &mode
	_, err = svcs.UpdateStatus(ctx, svc, metav1.UpdateOptions{})
	return err
}

// CoreDNSLogs returns the logs of every kube-dns Pod.
func (e *Env) CoreDNSLogs(ctx context.Context) ([]string, error) {
	pods, err := e.CP.Clientset.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil {
		return nil, err
	}
	var logs []string
	for _, p := range pods.Items {
		out, err := e.Nodes[0].Logs(p.Namespace, p.Name, "coredns")
		if err != nil {
			return nil, err
		}
		logs = append(logs, out)
	}
	return logs, nil
}

// WaitNothingLeft waits until [Env.Leftovers] finds nothing.
func (e *Env) WaitNothingLeft(ctx context.Context) error {
	return harness.Poll(ctx, func(ctx context.Context) error {
		left, err := e.Leftovers(ctx)
		if err != nil {
			return err
		}
		if len(left) > 0 {
			return fmt.Errorf("left behind: %v", left)
		}
		return nil
	})
}

// Leftovers lists what of the chart is still in the cluster after an
// uninstall: objects labelled with the release, Pods in the targets
// namespace, and hairpin's RBAC.
func (e *Env) Leftovers(ctx context.Context) ([]string, error) {
	cs := e.CP.Clientset
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=hairpin"}
	var left []string
	svcs, err := cs.CoreV1().Services("").List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, s := range svcs.Items {
		left = append(left, "service/"+s.Namespace+"/"+s.Name)
	}
	deps, err := cs.AppsV1().Deployments("").List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, d := range deps.Items {
		left = append(left, "deployment/"+d.Namespace+"/"+d.Name)
	}
	pods, err := cs.CoreV1().Pods(TargetNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		left = append(left, "pod/"+p.Namespace+"/"+p.Name)
	}
	crs, err := cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, r := range crs.Items {
		if strings.Contains(r.Name, "hairpin") {
			left = append(left, "clusterrole/"+r.Name)
		}
	}
	crbs, err := cs.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, r := range crbs.Items {
		if strings.Contains(r.Name, "hairpin") {
			left = append(left, "clusterrolebinding/"+r.Name)
		}
	}
	return left, nil
}

// reloadDone is what CoreDNS logs once a reload has replaced the running
// server with one built from the Corefile read again.
const reloadDone = "[INFO] Reloading complete"

// OperatorEdit is the stock Corefile with `log` added, the edit an operator
// makes while debugging, and which the distribution's next re-render wipes.
func (e *Env) OperatorEdit() string {
	return strings.Replace(e.Corefile, "    errors\n", "    errors\n    log\n", 1)
}

// ApplyAndReload writes text into the Corefile ConfigMap and waits until
// every kube-dns Pod has reloaded it: the node swaps the mounted file, and
// the reload plugin notices within its 30 s (±15 s) interval. A text whose
// parsed form equals the running one (comments, blank lines) is no change
// to CoreDNS and would never reload.
func (e *Env) ApplyAndReload(ctx context.Context, text string) error {
	before, err := e.CoreDNSLogs(ctx)
	if err != nil {
		return err
	}
	if err := e.ApplyCorefile(ctx, text); err != nil {
		return err
	}
	return harness.Poll(ctx, func(ctx context.Context) error {
		logs, err := e.CoreDNSLogs(ctx)
		if err != nil {
			return err
		}
		if len(logs) != len(before) {
			return fmt.Errorf("kube-dns has %d pods, had %d", len(logs), len(before))
		}
		for i, l := range logs {
			if strings.Count(l, reloadDone) <= strings.Count(before[i], reloadDone) {
				return fmt.Errorf("coredns pod %d has not reloaded yet", i)
			}
		}
		return nil
	})
}
