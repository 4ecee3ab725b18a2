package dataplane

import (
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
	"github.com/coredns-hairpin/hairpin/test/harness/node"
)

// ClientImage is the client Pod's image; the node runs it from the
// machine's own dig and curl.
const ClientImage = "docker.io/nicolaka/netshoot:v0.14"

// Controllers are the cluster's two ingress controllers, one per tenant.
var Controllers = []cluster.IngressController{
	{Namespace: "tenant-root", Class: "tenant-root", Hosts: []string{"www.example.com"}, LBIP: netip.MustParseAddr("203.0.113.10")},
	{Namespace: "tenant-a", Class: "tenant-a", Hosts: []string{"shop.a.example.org"}, LBIP: netip.MustParseAddr("203.0.113.11")},
}

// Zones are the controllers' zones, in the order of Controllers.
var Zones = []string{"example.com", "a.example.org"}

// Env is the cluster and what runs on it.
type Env struct {
	*cluster.Cluster
	// Distribution names the stock Corefile kube-dns runs (e2e.Distributions).
	Distribution string
	// Corefile is that stock text.
	Corefile string
	// Chart is the chart's folder; Helm runs against the cluster.
	Chart string
	Helm  *harness.Helm

	bin string
}

// Start starts the cluster for t in kube-proxy mode mode, with kube-dns on
// the stock Corefile of distribution, the controllers and the client Pod.
func Start(t testing.TB, mode, distribution string) *Env {
	t.Helper()
	return StartWith(t, Config{Mode: mode, Distribution: distribution})
}

// Config is a cluster that [StartWith] starts.
type Config struct {
	// Mode names the service dataplane (cluster.DataplaneNamed); Distribution
	// names the stock Corefile kube-dns runs (e2e.Distributions).
	Mode, Distribution string
	// Name tells the cluster's namespaces apart from the shared clusters'
	// (cluster.Options.Name); default Mode.
	Name string
	// ClusterDomain is the cluster's DNS domain, for which the
	// distribution's Corefile is rendered; default cluster.local.
	ClusterDomain string
	// Controllers are the ingress controllers; default [Controllers].
	Controllers []cluster.IngressController
	// CRDDirs are further CRDs the control plane installs at start.
	CRDDirs []string
	// HostSearch are the node's own search domains, after the cluster's
	// in a Pod's search path (cluster.Options.HostSearch).
	HostSearch []string
}

// StartWith starts the cluster cfg for t: [Start] with the cluster's
// domain, controllers and CRDs chosen.
func StartWith(t testing.TB, cfg Config) *Env {
	t.Helper()
	bin := os.Getenv(harness.EnvBin)
	if bin == "" {
		harness.SkipOrFail(t, "dataplane: %s is not set (make build images)", harness.EnvBin)
	}
	if cfg.Controllers == nil {
		cfg.Controllers = Controllers
	}
	e := &Env{Distribution: cfg.Distribution, bin: bin, Chart: filepath.Join(harness.RepoDir(t), "manifests", "coredns-hairpin")}
	var err error
	if e.Corefile, err = e2e.DistributionCorefile(cfg.Distribution); err != nil {
		t.Fatal(err)
	}
	if cfg.ClusterDomain != "" {
		if e.Corefile, err = e2e.InClusterDomain(e.Corefile, cfg.ClusterDomain); err != nil {
			t.Fatal(err)
		}
	}
	e.Helm = harness.RequireHelm(t)
	images, err := e.images(t)
	if err != nil {
		t.Fatal(err)
	}
	dp, err := cluster.DataplaneNamed(cfg.Mode)
	if err != nil {
		t.Fatal(err)
	}
	e.Cluster = cluster.Start(t, cluster.Options{Dataplane: dp, Name: cfg.Name, ClusterDomain: cfg.ClusterDomain,
		Images: images, GatewayAPI: harness.GatewayStandard, CRDDirs: cfg.CRDDirs, HostSearch: cfg.HostSearch})
	e.Helm = e.Helm.WithKubeconfig(e.CP.Kubeconfig)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kubeDNS := kubeDNSWorkloads[cfg.Distribution]
	kubeDNS.Image, kubeDNS.Corefile = e.CoreDNSImage(), e.Corefile
	if err := e.InstallKubeDNS(ctx, kubeDNS); err != nil {
		t.Fatal(err)
	}
	for _, ic := range cfg.Controllers {
		if err := e.InstallIngressController(ctx, ic); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.startClients(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

// kubeDNSWorkloads are how distributions deploy CoreDNS where it differs
// from kubeadm's Deployment, by the name of their Corefile.
var kubeDNSWorkloads = map[string]cluster.KubeDNSOptions{
	// Cozystack's coredns package (cozystack/cozystack at 3c780acd,
	// packages/system/coredns/values.yaml: serviceAccount kube-dns;
	// templates/coredns-custom.yaml: coredns-custom with no data, mounted
	// optional at /etc/coredns/custom).
	CozyTenantDistribution: {ServiceAccount: "kube-dns", CustomConfigMap: "coredns-custom"},
}

// CoreDNSImage is the reference kube-dns runs: our image, at the chart's
// appVersion.
func (e *Env) CoreDNSImage() string { return "ghcr.io/coredns-hairpin/coredns:" + e.appVersion() }

// images maps every image the cluster runs to what runs it: our two
// images from `make images` (the proxy under the reference the chart
// renders), nginx and the client's tools from the machine.
func (e *Env) images(t testing.TB) (map[string]node.Image, error) {
	proxyRefs, err := e.chartImages(t)
	if err != nil {
		return nil, err
	}
	layout := func(name string) (string, error) {
		dir := filepath.Join(e.bin, "images", name)
		if _, err := os.Stat(filepath.Join(dir, "index.json")); err != nil {
			return "", fmt.Errorf("dataplane: no OCI layout of %s in %s (make images): %w", name, dir, err)
		}
		return dir, nil
	}
	coredns, err := layout("coredns")
	if err != nil {
		return nil, err
	}
	proxy, err := layout("hairpin-proxy")
	if err != nil {
		return nil, err
	}
	images := map[string]node.Image{
		e.CoreDNSImage():   {OCILayout: coredns},
		cluster.NginxImage: {Host: true},
		ClientImage:        {Host: true},
	}
	for _, ref := range proxyRefs {
		images[ref] = node.Image{OCILayout: proxy}
	}
	return images, nil
}

// chartImages returns the image references the chart renders with the
// install values.
func (e *Env) chartImages(t testing.TB) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	values, err := e.valuesFile(t, Values())
	if err != nil {
		return nil, err
	}
	out, err := e.Helm.Run(ctx, "template", "hairpin", e.Chart, "-n", "hairpin-system", "-f", values)
	if err != nil {
		return nil, fmt.Errorf("dataplane: helm template: %w", err)
	}
	var refs []string
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "image:"); ok {
			refs = append(refs, strings.Trim(strings.TrimSpace(v), `"'`))
		}
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("dataplane: the chart renders no image")
	}
	return refs, nil
}

// The client Pods in default: a shell with dig, curl, bash and ss, one in a
// network namespace of its own, one in the node's.
const (
	// ClientPod has ClusterFirst DNS.
	ClientPod = "client"
	// HostClientPod is hostNetwork, with ClusterFirstWithHostNet DNS: a
	// node agent or a hostNetwork Pod, whose sockets a socket load balancer
	// (Cilium's bpf_sock) translates at connect.
	HostClientPod = "hostclient"
)

// startClients starts the client Pods.
func (e *Env) startClients(ctx context.Context) error {
	for _, name := range []string{ClientPod, HostClientPod} {
		spec := corev1.PodSpec{Containers: []corev1.Container{{
			Name: "client", Image: ClientImage, Command: []string{"sleep", "infinity"},
		}}}
		if name == HostClientPod {
			spec.HostNetwork, spec.DNSPolicy = true, corev1.DNSClusterFirstWithHostNet
		}
		_, err := e.CP.Clientset.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
			Spec:       spec,
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("dataplane: %s pod: %w", name, err)
		}
	}
	for _, name := range []string{ClientPod, HostClientPod} {
		err := harness.Poll(ctx, func(ctx context.Context) error {
			if _, ok := e.Nodes[0].PodIP("default", name); !ok {
				return fmt.Errorf("the %s pod has no IP yet", name)
			}
			p, err := e.CP.Clientset.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("%s pod %s", name, p.Status.Phase)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ClientIP is the client Pod's address.
func (e *Env) ClientIP() netip.Addr {
	ip, _ := e.Nodes[0].PodIP("default", ClientPod)
	return ip
}

// ClientIPOutside is the client Pod's address as a controller behind the
// load balancer sees it: the Pod's own, or the node's where the dataplane
// masquerades Pod traffic that leaves the node.
func (e *Env) ClientIPOutside() netip.Addr {
	if e.Capabilities().MasqueradesPods {
		return e.Nodes[0].IP
	}
	return e.ClientIP()
}

// SourceSeen is the address a backend sees for client pod's (ClientPod's
// or HostClientPod's) connection to dst, which the dataplane sends to
// backend: the row of the dataplane's table for that client and path,
// which its capabilities give. external says dst is a Service's external
// address (LoadBalancer IP, externalIP), not its ClusterIP.
func (e *Env) SourceSeen(pod string, external bool, backend netip.Addr) (netip.Addr, error) {
	caps := e.Capabilities()
	masq := external && caps.MasqueradesExternal || pod == HostClientPod && !external && caps.MasqueradesNodeToClusterIP
	dev, src, err := e.nodeRoute(backend)
	switch {
	case err != nil:
		return netip.Addr{}, err
	case masq:
		// MASQUERADE takes the out interface's first address.
		return e.nodeAddrOn(dev)
	case pod == ClientPod:
		return e.ClientIP(), nil
	default:
		return src, nil
	}
}

// nodeRoute is the node's route to dst: its interface and the source
// address it picks (`ip route get`).
func (e *Env) nodeRoute(dst netip.Addr) (string, netip.Addr, error) {
	out, err := e.NodeNS.IP("-j", "route", "get", dst.String())
	if err != nil {
		return "", netip.Addr{}, err
	}
	var routes []struct {
		Dev     string `json:"dev"`
		Prefsrc string `json:"prefsrc"`
	}
	if err := json.Unmarshal([]byte(out), &routes); err != nil || len(routes) == 0 {
		return "", netip.Addr{}, fmt.Errorf("the node's route to %s: %q: %v", dst, out, err)
	}
	src, err := netip.ParseAddr(routes[0].Prefsrc)
	if err != nil {
		return "", netip.Addr{}, fmt.Errorf("the node's route to %s: %q: %w", dst, out, err)
	}
	return routes[0].Dev, src, nil
}

// nodeAddrOn is the first IPv4 address of the node's interface dev.
func (e *Env) nodeAddrOn(dev string) (netip.Addr, error) {
	out, err := e.NodeNS.IP("-j", "-4", "addr", "show", "dev", dev)
	if err != nil {
		return netip.Addr{}, err
	}
	var links []struct {
		AddrInfo []struct {
			Local string `json:"local"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) == 0 || len(links[0].AddrInfo) == 0 {
		return netip.Addr{}, fmt.Errorf("the node's %s has no IPv4 address: %q: %v", dev, out, err)
	}
	return netip.ParseAddr(links[0].AddrInfo[0].Local)
}

// Resolve asks the cluster DNS for host's A records from the client Pod,
// with dig through its resolv.conf.
func (e *Env) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	return e.dig(ctx, "+search", host, "A")
}

// ResolveAt asks one DNS server, from the client Pod, for host's A records.
func (e *Env) ResolveAt(ctx context.Context, server netip.Addr, host string) ([]netip.Addr, error) {
	return e.dig(ctx, "@"+server.String(), host, "A")
}

func (e *Env) dig(ctx context.Context, args ...string) ([]netip.Addr, error) {
	out, errOut, err := e.Nodes[0].Exec(ctx, "default", "client", "client", append([]string{"dig", "+short", "+time=2", "+tries=1"}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("dig %v in the client pod: %w: %s", args, err, errOut)
	}
	var addrs []netip.Addr
	for _, f := range strings.Fields(out) {
		if a, err := netip.ParseAddr(f); err == nil {
			addrs = append(addrs, a)
		}
	}
	return addrs, nil
}

// Curl requests url from the client Pod with curl, through the cluster DNS.
func (e *Env) Curl(ctx context.Context, url string) (string, error) {
	return e.CurlFrom(ctx, ClientPod, url)
}

// CurlFrom requests url from the client Pod pod ([ClientPod] or
// [HostClientPod]) with curl, through the cluster DNS.
func (e *Env) CurlFrom(ctx context.Context, pod, url string) (string, error) {
	out, errOut, err := e.Nodes[0].Exec(ctx, "default", pod, "client", "curl", "-sS", "-k", "--max-time", "5", url)
	if err != nil {
		return out + errOut, fmt.Errorf("curl %s in the %s pod: %w: %s", url, pod, err, strings.TrimSpace(errOut))
	}
	return out, nil
}

// CurlExitFrom runs curl with args (a URL, and options such as -H) in the
// client Pod pod once and returns
// curl's exit code and what it printed: a failure of the request is an
// exit code, not an error (52 is an empty reply, 56 a reset); err is for
// a curl that could not run.
func (e *Env) CurlExitFrom(ctx context.Context, pod string, args ...string) (int, string, error) {
	url := strings.Join(args, " ")
	script := `curl -sS -k --max-time 5 "$@"; echo "curl-exit=$?"`
	out, errOut, err := e.Nodes[0].Exec(ctx, "default", pod, "client", append([]string{"bash", "-c", script, "curl"}, args...)...)
	if err != nil {
		return 0, out + errOut, fmt.Errorf("curl %s in the %s pod: %w: %s", url, pod, err, strings.TrimSpace(errOut))
	}
	body, code, ok := strings.Cut(out, "curl-exit=")
	if !ok {
		return 0, out + errOut, fmt.Errorf("curl %s in the %s pod printed no exit code: %q", url, pod, out)
	}
	n, err := strconv.Atoi(strings.TrimSpace(code))
	if err != nil {
		return 0, out + errOut, fmt.Errorf("curl %s in the %s pod: exit code %q: %w", url, pod, code, err)
	}
	return n, body + errOut, nil
}

// ConnectedPeer connects from the client Pod pod to addr, and returns the
// peer of the connected socket as the kernel holds it (ss): addr itself
// when the address is translated per packet (kube-proxy's DNAT, Cilium's
// bpf_lxc on the Pod's veth), the backend when the connect itself was
// translated (Cilium's socket load balancing, bpf_sock).
func (e *Env) ConnectedPeer(ctx context.Context, pod string, addr netip.AddrPort) (netip.AddrPort, error) {
	script := fmt.Sprintf(`exec 3<>/dev/tcp/%s/%d && ss -Htnp state established | grep "pid=$$,fd=3)"`, addr.Addr(), addr.Port())
	out, errOut, err := e.Nodes[0].Exec(ctx, "default", pod, "client", "bash", "-c", script)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("connect to %s from the %s pod: %w: %s%s", addr, pod, err, out, errOut)
	}
	// Recv-Q Send-Q Local:Port Peer:Port Process
	f := strings.Fields(out)
	if len(f) < 4 {
		return netip.AddrPort{}, fmt.Errorf("connect to %s from the %s pod: ss printed %q", addr, pod, out)
	}
	return netip.ParseAddrPort(f[3])
}

// WaitCurl is Curl until it succeeds, up to 30 s: a path that has just
// become right (a target's Pods Ready, an answer changed) may wait for
// kube-proxy's next sync, at most --iptables-min-sync-period (1 s) later.
func (e *Env) WaitCurl(ctx context.Context, url string) (string, error) {
	return e.WaitCurlFrom(ctx, ClientPod, url)
}

// WaitCurlFrom is WaitCurl from the client Pod pod.
func (e *Env) WaitCurlFrom(ctx context.Context, pod, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var body string
	err := harness.Poll(ctx, func(ctx context.Context) error {
		out, err := e.CurlFrom(ctx, pod, url)
		body = out
		return err
	})
	return body, err
}

// appVersion is the chart's appVersion.
func (e *Env) appVersion() string { return e.chartField("appVersion") }

// chartField returns a top-level string field of Chart.yaml, "dev" when
// it cannot be read.
func (e *Env) chartField(name string) string {
	b, err := os.ReadFile(filepath.Join(e.Chart, "Chart.yaml"))
	if err != nil {
		return "dev"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return "dev"
}
