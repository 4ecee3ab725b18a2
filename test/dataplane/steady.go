package dataplane

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
	"github.com/coredns-hairpin/hairpin/test/harness/steady"
)

// StartSteady starts the steady client in the client Pod's network
// namespace: for each host, a query to kube-dns and a request to its answer
// every 20 ms, until Stop. The client is the steady command in
// HAIRPIN_BIN.
func (e *Env) StartSteady(hosts ...string) (*steady.Client, error) {
	return e.startSteady(steady.Config{DNS: net.JoinHostPort(cluster.DNSIP.String(), "53"), Hosts: hosts})
}

// StartKeepAlive is [Env.StartSteady] with the requests on keep-alive
// connections, a pool per host, as a service's HTTP client sends them.
func (e *Env) StartKeepAlive(hosts ...string) (*steady.Client, error) {
	return e.startSteady(steady.Config{DNS: net.JoinHostPort(cluster.DNSIP.String(), "53"), Hosts: hosts, KeepAlive: true})
}

// StartDownload starts one GET of path for host at addr:80 from the client
// Pod, read at rate bytes/s; Wait returns its result.
func (e *Env) StartDownload(addr netip.Addr, host, path string, rate int64) (*steady.Client, error) {
	return e.startSteady(steady.Config{Download: &steady.Download{
		Addr: net.JoinHostPort(addr.String(), "80"), Host: host, Path: path, Rate: rate,
	}})
}

// startSteady starts the steady command with cfg in the client Pod.
func (e *Env) startSteady(cfg steady.Config) (*steady.Client, error) {
	pid, err := e.clientPID()
	if err != nil {
		return nil, err
	}
	return steady.Start(e.steadyBin(), pid, e.NodeNS.Cgroup, cfg)
}

// steadyBin is the steady command, which `make test` builds beside our
// binaries.
func (e *Env) steadyBin() string { return filepath.Join(e.bin, "steady") }

func (e *Env) clientPID() (int, error) {
	pid, ok := e.Nodes[0].ContainerPID("default", "client", "client")
	if !ok {
		return 0, fmt.Errorf("dataplane: the client pod's container is not running")
	}
	return pid, nil
}

// ProxyPods returns the names of the proxy's Pods that are not terminating.
func (e *Env) ProxyPods(ctx context.Context) ([]string, error) {
	pods, err := e.CP.Clientset.CoreV1().Pods(TargetNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	return names, nil
}
