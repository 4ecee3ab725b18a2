package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/hoststate"
	"github.com/coredns-hairpin/hairpin/test/harness/node"
)

// ciliumName is the name of Cilium's dataplane ([Cilium]).
const ciliumName = "cilium"

// ciliumPerPacketName is Cilium with socket load balancing kept to the
// node's namespace: the Pods' connections are translated per packet.
const ciliumPerPacketName = "cilium-per-packet"

// ciliumDataplane is cilium-agent as kube-proxy replacement, with
// cilium-cni attaching the Pods, configured by its chart's values:
// Cozystack's files, then values. It is the cilium mode, or a shape of it
// ([Shapes]) called name, or an opt-in mode of its own (name: see
// [OptInDataplanes]).
type ciliumDataplane struct {
	shape  *ciliumShape
	name   string // an opt-in mode's; "" for the shape's
	values CiliumValues
}

// Cilium is the dataplane of cilium-agent as kube-proxy replacement, its
// chart rendered with Cozystack's values files and then values
// ([DefaultCiliumValues]: the deviation table's). What it does follows
// from them ([ciliumDataplane.Capabilities]).
func Cilium(values CiliumValues) Dataplane {
	return ciliumDataplane{shape: ciliumModeShape, values: maps.Clone(values)}
}

func (d ciliumDataplane) Name() string {
	if d.name != "" {
		return d.name
	}
	return d.shape.name
}

// Mode: every shape of Cilium is selected by the cilium mode; an opt-in
// mode by its own name.
func (d ciliumDataplane) Mode() string {
	if d.name != "" {
		return d.name
	}
	return ciliumName
}

// value is the value in effect at path: the dataplane's own, else the
// last of Cozystack's files that sets it, as a string; "" when none sets
// it (the chart's default holds) or it is unset.
func (d ciliumDataplane) value(path string) string {
	v, ok := d.values[path]
	if !ok {
		var err error
		// The files are embedded, and an error reading them fails the
		// render before any Capabilities matter.
		if v, ok, err = d.shape.cozystackValue(path); err != nil || !ok {
			return ""
		}
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func (d ciliumDataplane) Capabilities() Capabilities {
	// Socket load balancing is on with kube-proxy replacement, whatever
	// socketLB.enabled says (cilium pkg/kpr NewKPRConfig, v1.19.5);
	// hostNamespaceOnly leaves the Pods' connections to bpf_lxc's
	// per-packet translation, whose UDP flows follow a gone backend.
	socketLB := d.value("kubeProxyReplacement") == "true" || d.value("socketLB.enabled") == "true"
	hostOnly := d.value("socketLB.hostNamespaceOnly") == "true"
	progs := []string{"cil_from_container"} // bpf_lxc, on each Pod's veth
	if socketLB {
		progs = append(progs, "cil_sock4_connect") // bpf_sock
	}
	return Capabilities{
		Agent:                      "cilium-agent",
		KubeProxyReplacement:       true,
		Version:                    CiliumVersion,
		SocketLBInNode:             socketLB,
		SocketLBInPods:             socketLB && !hostOnly,
		MasqueradesPods:            d.value("enableIPv4Masquerade") != "false", // Cilium's default is on
		Frontends:                  true,
		BPFPrograms:                progs,
		UDPFlowsFollowGoneBackends: !socketLB || hostOnly,
	}
}

func (ciliumDataplane) prepare(t testing.TB, c *Cluster) error {
	var err error
	if c.ciliumDir, err = ciliumAssets(c.opts.AssetsDir); err != nil {
		return err
	}
	if c.opts.Helm == nil {
		c.opts.Helm = harness.RequireHelm(t)
	}
	return nil
}

func (ciliumDataplane) crdDirs(c *Cluster) []string {
	return []string{filepath.Join(c.ciliumDir, "share", "crds")}
}

// controllers: kube-proxy's, and no daemonset controller: the cilium
// DaemonSet is a record, its agent a process of the harness.
func (ciliumDataplane) controllers() string { return KubeProxy("").controllers() + ",-daemonset" }

func (d ciliumDataplane) start(t testing.TB, c *Cluster) error {
	return c.startCilium(t, c.opts.Helm, d.shape, d.values)
}

func (ciliumDataplane) cni(c *Cluster) *node.CNI { return c.cilium.cni() }

// waitReady: the agent has waited for its Node and its podCIDR; it
// compiles its BPF programs with clang before it is ready.
func (ciliumDataplane) waitReady(t testing.TB, c *Cluster) error { return c.cilium.waitReady(t, c) }

// CiliumVersion is the Cilium that test/tools/cilium builds.
const CiliumVersion = "v1.19.5"

// CiliumImage is the image of the cilium DaemonSet that the harness
// records: Cozystack's build of Cilium [CiliumVersion], tagged with the
// platform's version (cozystack/cozystack packages/system/cilium/values.yaml,
// testdata/cozystack/cilium). The agent that runs is the one
// test/tools/cilium builds.
const CiliumImage = "ghcr.io/cozystack/cozystack/cilium:v1.6.0@sha256:136a7dfff4d6adcd448424c2354144160028a8e96eb6558b917fd3ee6d7b39fe"

// CiliumOperatorImage is the image of the cilium-operator Deployment that
// the harness records: upstream's, which Cozystack does not override, as
// its copy of the released chart renders it (digest from
// packages/system/cilium/charts/cilium/values.yaml of cozystack/cozystack).
const CiliumOperatorImage = "quay.io/cilium/operator-generic:" + CiliumVersion + "@sha256:be848a365776e07d0c5a895eda7aec928ddc52a5a1fa2f432fd7a286609e1db4"

// ciliumHealthz is the agent's health endpoint in the node, which the
// chart's readiness probe asks.
const ciliumHealthz = "http://127.0.0.1:9879/healthz"

// cilium is cilium-agent running as the node's dataplane: a process of
// the harness, not a Pod (the cilium DaemonSet is a record, see
// [Cluster.startCilium]).
type cilium struct {
	assets string // AssetsDir/cilium: cilium-agent, cilium-cni, share/
	// dir is a short folder of the agent's own (a unix socket path must
	// stay under 108 bytes): config/ (its --config-dir), run/ (its
	// /run/cilium, holding its API socket cilium.sock), cni/ (the
	// conflist it writes when ready), bin/ (clang).
	dir     string
	agent   *harness.Process
	started time.Time
	bpf     *hoststate.BPF // the machine's BPF state before the agent
	chain   *ciliumChain   // the primary network cilium-cni is chained on, if it is
}

// ciliumAssets returns the folder of cilium-agent, cilium-cni and share/
// that build/tools.sh links into the control-plane folder, or why the
// cilium mode cannot run on this machine.
func ciliumAssets(assets string) (string, error) {
	dir := filepath.Join(assets, "cilium")
	for _, f := range []string{"cilium-agent", "cilium-cni"} {
		if err := harness.Executable(filepath.Join(dir, f)); err != nil {
			return "", fmt.Errorf("%w; run `build/tools.sh cilium`", err)
		}
	}
	for _, d := range []string{"share/bpf", "share/crds", "share/chart"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err != nil {
			return "", fmt.Errorf("%w; run `build/tools.sh cilium`", err)
		}
	}
	if _, err := clang(); err != nil {
		return "", err
	}
	if _, err := exec.LookPath("bpftool"); err != nil {
		return "", fmt.Errorf("bpftool is not installed (make deps): %w", err)
	}
	if out, err := exec.Command("bpftool", "prog", "show").CombinedOutput(); err != nil {
		return "", fmt.Errorf("this kernel gives no BPF (bpftool prog show: %v: %s)", err, strings.TrimSpace(string(out)))
	}
	return dir, nil
}

// clang returns a clang of at least 18.1, which Cilium's BPF C needs:
// Debian's clang-19, or a clang on PATH.
func clang() (string, error) {
	for _, name := range []string{"clang-19", "clang-20", "clang-18", "clang"} {
		path, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		out, err := exec.Command(path, "-dumpversion").Output()
		if err != nil {
			continue
		}
		var major, minor int
		if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "%d.%d", &major, &minor); err == nil && (major > 18 || major == 18 && minor >= 1) {
			return path, nil
		}
	}
	return "", fmt.Errorf("no clang >= 18.1 to compile Cilium's BPF programs (make deps installs clang-19)")
}

// startCilium records the install as Cilium's chart leaves it (the
// cilium-config ConfigMap, the cilium DaemonSet and the cilium-operator
// Deployment in [CiliumNamespace]) and
// starts cilium-agent in the node's network namespace and a mount
// namespace of its own. It does not wait: the agent waits for its Node,
// which the node agent registers next; see [cilium.waitReady].
// machineRunCilium is where cilium-cni, in the machine's mount namespace,
// keeps its queue of deletions that an absent agent could not take.
const machineRunCilium = "/run/cilium"

func (c *Cluster) startCilium(t testing.TB, helm *harness.Helm, shape *ciliumShape, values CiliumValues) error {
	cl := &cilium{assets: c.ciliumDir, started: time.Now()}
	var err error
	if cl.dir, err = os.MkdirTemp("", "cilium-"); err != nil {
		return fmt.Errorf("cilium: %w", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(cl.dir) })
	for _, d := range []string{"config", "run/netns", "cni", "bin"} {
		if err := os.MkdirAll(filepath.Join(cl.dir, d), 0o755); err != nil {
			return fmt.Errorf("cilium: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	install, err := renderCiliumChart(ctx, helm, filepath.Join(cl.assets, "share", "chart"), shape, values)
	if err != nil {
		return err
	}
	if err := install.apply(ctx, c.CP.Clientset); err != nil {
		return err
	}
	if cl.chain, err = newCiliumChain(ctx, c.CP, install, c.opts.AssetsDir, cl.dir, c.Nodes[0].NodePlan); err != nil {
		return err
	}
	// The agent reads its settings from the ConfigMap's data, one file per
	// key, as the DaemonSet mounts it at --config-dir.
	for k, v := range install.config.Data {
		if err := os.WriteFile(filepath.Join(cl.dir, "config", k), []byte(v), 0o644); err != nil {
			return fmt.Errorf("cilium: %w", err)
		}
	}
	cc, err := clang()
	if err != nil {
		return err
	}
	if err := os.Symlink(cc, filepath.Join(cl.dir, "bin", "clang")); err != nil {
		return fmt.Errorf("cilium: %w", err)
	}
	if cl.bpf, err = hoststate.TakeBPF(); err != nil {
		return fmt.Errorf("cilium: %w", err)
	}
	// Registered before the agent starts, so it runs after the agent has
	// stopped: what a killed agent left attached to the cgroup2 root, the
	// machine's, goes explicitly.
	t.Cleanup(func() {
		if err := cl.bpf.DetachNew(); err != nil {
			t.Errorf("cluster: %v", err)
		}
	})
	// cilium-cni runs in the machine's mount namespace, and a DEL that
	// finds no agent (one that crashed) queues the deletion under the
	// machine's /run/cilium/deleteQueue: it goes too, unless it was there
	// before.
	if _, err := os.Stat(machineRunCilium); errors.Is(err, os.ErrNotExist) {
		t.Cleanup(func() { _ = os.RemoveAll(machineRunCilium) })
	}
	cl.agent = harness.StartCmd(t, "cilium-agent", cl.command(c))
	c.cilium = cl
	return nil
}

// agentMounts is the script that gives the agent its mounts, inside the
// mount namespace of `ip netns exec` (whose mounts are slaves of the
// machine's, so nothing propagates back) and of its own unshare:
//   - /run is a fresh tmpfs, with /run/cilium the harness's run/ folder:
//     what the agent writes under /var/run/cilium stays in the test's
//     folder, and its API socket is reachable there for cilium-cni;
//   - /run/cilium/netns is the machine's /run/netns, as the DaemonSet
//     mounts it, where the Pods' namespaces are;
//   - a bpffs of its own on /sys/fs/bpf, gone with the namespace;
//   - the node's cgroup on /run/cilium/cgroupv2, its cgroup root: a bind
//     mount of that child, since over a path that is no cgroup2 mount
//     the agent mounts the hierarchy itself, whose root is the machine's.
//     Its socket programs attach there, so they act on the node's
//     processes only;
//   - /proc/sys read-only, but for /proc/sys/net, which shows the node's
//     namespace: the agent changes no machine-wide sysctl.
const agentMounts = `set -e
d=$1 cg=$2; shift 2
mount --rbind /run/netns "$d/run/netns"
mount -t tmpfs -o mode=0755 cilium-run /run
mkdir /run/cilium
mount --rbind "$d/run" /run/cilium
mount -t bpf bpffs /sys/fs/bpf
mkdir -p /run/cilium/cgroupv2 /run/cgroup2
mount -t cgroup2 cgroup2 /run/cgroup2
mount --bind "/run/cgroup2/$cg" /run/cilium/cgroupv2
umount /run/cgroup2
mount --bind /proc/sys /proc/sys
mount -o remount,bind,ro /proc/sys
mount --bind /proc/sys/net /proc/sys/net
mount -o remount,bind,rw /proc/sys/net
exec "$@"
`

// command is cilium-agent as the DaemonSet runs it (--config-dir), with
// the paths of this node: the kubeconfig, its BPF sources (--lib-dir), /proc
// rather than the container's /host/proc, the conflist it writes, the one
// it reads when chained, and the CNI log in the test's folder.
func (cl *cilium) command(c *Cluster) *exec.Cmd {
	cmd := c.topo.node.Command("unshare", "--mount", "--propagation", "slave", "/bin/sh", "-c", agentMounts, "cilium-mounts", cl.dir, c.topo.cgroup.Name,
		filepath.Join(cl.assets, "cilium-agent"),
		"--config-dir="+filepath.Join(cl.dir, "config"),
		"--k8s-kubeconfig-path="+c.CP.Kubeconfig,
		"--lib-dir="+filepath.Join(cl.assets, "share"),
		"--procfs=/proc",
		"--write-cni-conf-when-ready="+filepath.Join(cl.dir, "cni", "05-cilium.conflist"),
		"--cni-log-file="+filepath.Join(cl.dir, "cilium-cni.log"),
	)
	if cl.chain != nil {
		cmd.Args = append(cmd.Args, "--read-cni-conf="+cl.chain.conf)
	}
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Join(cl.dir, "bin")+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"K8S_NODE_NAME="+c.Nodes[0].Name,
		"CILIUM_K8S_NAMESPACE="+CiliumNamespace,
	)
	return cmd
}

// cni is how the node agent attaches Pods: the conflist the agent writes
// when it is ready, cilium-cni (and the plugins it is chained on), and the
// agent's API socket.
func (cl *cilium) cni() *node.CNI {
	path := []string{cl.assets}
	if cl.chain != nil {
		path = append(path, cl.chain.bin)
	}
	return &node.CNI{
		ConfFile: filepath.Join(cl.dir, "cni", "05-cilium.conflist"),
		Path:     path,
		Env:      []string{"CILIUM_SOCK=" + filepath.Join(cl.dir, "run", "cilium.sock")},
	}
}

// ciliumReadyTimeout bounds the agent's start: it compiles its host, overlay
// and socket programs with clang first, which takes tens of seconds of CPU.
const ciliumReadyTimeout = 5 * time.Minute

// waitReady waits until the agent's health endpoint answers 200 and it has
// written its CNI configuration, and logs how long it took from start.
func (cl *cilium) waitReady(t testing.TB, c *Cluster) error {
	ctx, cancel := context.WithTimeout(context.Background(), ciliumReadyTimeout)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return c.topo.node.DialContext(ctx, "tcp", addr)
		},
	}, Timeout: 2 * time.Second}
	err := cl.agent.Ready(ctx, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ciliumHealthz, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", ciliumHealthz, resp.Status)
		}
		_, err = os.Stat(cl.cni().ConfFile)
		return err
	})
	if err != nil {
		return fmt.Errorf("cilium-agent not ready: %w", err)
	}
	t.Logf("cluster: cilium-agent ready %s after its start", time.Since(cl.started).Round(time.Millisecond))
	return nil
}
