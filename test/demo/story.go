package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/dataplane"
	"github.com/coredns-hairpin/hairpin/test/e2e"
	"github.com/coredns-hairpin/hairpin/test/harness"
)

// story prints the demo for a person: numbered steps, the commands as one
// would type them, and their real output. Each step returns an error when
// its claim is false, so that TestDemoStory fails when the story stops
// being true.
type story struct {
	w    io.Writer
	keep bool   // DEMO_KEEP=1
	root string // the demo's working folder
	kept bool   // the story paused for DEMO_KEEP and the stack was kept

	// wait is how DEMO_KEEP pauses before the uninstall; it returns false
	// to stop without it. Default: Enter on stdin, or Ctrl-C.
	wait func(ctx context.Context) bool

	c     *cluster
	helm  *harness.Helm
	proxy *harness.Process

	// loopback forces the loopback story even where the real dataplane
	// could run (TestDemoStory tells both).
	loopback bool
	// dp is the real-dataplane cluster, when the story runs there.
	dp *dataplane.Env
}

// The release, as docs and NOTES name it.
const (
	release   = "hairpin"
	namespace = "hairpin-system"
	chartPath = "manifests/coredns-hairpin"
)

// repoDir is the repository's root, wherever the demo runs from.
var repoDir = func() string {
	dir, err := filepath.Abs(filepath.Join(e2e.CorefilesDir, "..", "..", "..", ".."))
	if err != nil {
		return "."
	}
	return dir
}()

func (st *story) run(ctx context.Context, t testing.TB) error {
	if !st.loopback {
		why := dataplaneUnavailable()
		if why == "" {
			return st.runDataplane(ctx, t)
		}
		st.linef("demo: %s; telling the story on the loopback model instead.", why)
	}
	// Fail before the slow part when a binary is missing.
	harness.RequireBinary(t, "coredns")
	harness.RequireBinary(t, "hairpin-proxy")
	harness.RequireAssets(t)
	helm := harness.RequireHelm(t)

	st.header("The cluster (real binaries, all on loopback)")
	start := time.Now()
	c, err := startCluster(ctx, t, st.root)
	if err != nil {
		return err
	}
	st.c, st.helm = c, helm.WithKubeconfig(c.cp.Kubeconfig)
	st.linef("kube-apiserver + etcd  %s  (up in %s; Service ClusterIPs from %s)", c.cp.Config.Host, time.Since(start).Round(100*time.Millisecond), harness.ServiceCIDR)
	for _, ctl := range c.controllers {
		st.linef("%-22s %s:%d and :%d, \"LoadBalancer IP\" of zone %s; every listener requires a PROXY header",
			"controller "+ctl.class, ctl.lb, portOf(ctl.nginx.HTTPAddr), portOf(ctl.nginx.TLSAddr), ctl.zone)
		st.linef("%-22s logs in %s", "", filepath.Dir(ctl.nginx.AccessLogPath))
	}
	st.linef("public DNS             %s  (each zone on its controller's load balancer)", c.publicDNS)
	st.linef("cluster DNS            %s  our CoreDNS image (bin/coredns), %s's stock Corefile, as %s", c.dns, distributionName, corednsUser)
	st.linef("                       with %s's RBAC for the kubernetes plugin (nothing for hairpin)", distributionName)
	st.linef("")
	st.note("Commands are shown as you would type them. kubectl lines are answered by the demo itself")
	st.note("from the apiserver (client-go), so no kubectl is needed; helm, dig and curl are the real ones.")
	st.cmd("export KUBECONFIG=%s", c.cp.Kubeconfig)
	for _, ctl := range c.controllers {
		st.cmd("kubectl create ingress shop -n %s --class %s --rule '%s/*=shop:80'", ctl.class, ctl.class, ctl.host)
		st.block("ingress.networking.k8s.io/shop created")
	}

	for _, step := range []func(context.Context, testing.TB) error{st.broken, st.install, st.fixed, st.rerender} {
		if err := step(ctx, t); err != nil {
			return err
		}
	}
	if st.keep {
		st.kept = true
		if !st.keepRunning(ctx) {
			return nil
		}
	}
	return st.uninstall(ctx, t)
}

// keepRunning prints how to play with the installed stack and waits; it
// returns whether to go on with the uninstall.
func (st *story) keepRunning(ctx context.Context) bool {
	c := st.c
	h, p := splitHostPort(c.dns)
	st.header("The stack keeps running (DEMO_KEEP=1): Enter uninstalls (step 5), Ctrl-C stops")
	st.linef("export KUBECONFIG=%s", c.cp.Kubeconfig)
	st.linef("cluster DNS  %s port %s; its Corefile %s, its log %s", h, p, c.corefile, c.coredns.LogPath)
	for _, ctl := range c.controllers {
		st.linef("%-12s target %s, logs %s", ctl.class, ctl.target, filepath.Dir(ctl.nginx.AccessLogPath))
	}
	st.linef("")
	st.linef("Try:")
	ctl := c.controllers[0]
	st.linef("  kubectl create ingress demo -n %s --class %s --rule 'demo.%s/*=shop:80'", ctl.class, ctl.class, ctl.zone)
	st.linef("  dig @%s -p %s demo.%s +short", h, p, ctl.zone)
	st.linef("  curl --resolve demo.%s:443:%s -k https://demo.%s/", ctl.zone, ctl.target, ctl.zone)
	st.linef("(CoreDNS caches every answer for up to its TTL, 5 s: a name dug before its Ingress exists")
	st.linef("keeps the public answer that long.)")
	wait := st.wait
	if wait == nil {
		wait = waitEnter
	}
	return wait(ctx)
}

func (st *story) header(title string) {
	fmt.Fprintf(st.w, "\n=== %s ===\n\n", title)
}

func (st *story) linef(format string, args ...any) {
	fmt.Fprintf(st.w, format+"\n", args...)
}

func (st *story) note(text string) {
	fmt.Fprintf(st.w, "# %s\n", text)
}

// cmd prints a command line as typed.
func (st *story) cmd(format string, args ...any) {
	fmt.Fprintf(st.w, "$ "+format+"\n", args...)
}

func (st *story) block(text string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(st.w, "    %s\n", l)
	}
}

// dig resolves name at server with dig +short, prints the exchange and
// returns the single address of the answer.
func (st *story) dig(ctx context.Context, server, name string) (netip.Addr, error) {
	h, p := splitHostPort(server)
	st.cmd("dig @%s -p %s %s +short", h, p, name)
	out, err := e2e.Dig(ctx, server, name, "A", "+short")
	if err != nil {
		return netip.Addr{}, err
	}
	st.block(out)
	addrs := e2e.ParseDigShort(out)
	if len(addrs) != 1 {
		return netip.Addr{}, fmt.Errorf("dig %s at %s: want one address, got %q", name, server, out)
	}
	return addrs[0], nil
}

// digWant is dig that fails unless the answer is want.
func (st *story) digWant(ctx context.Context, server, name string, want netip.Addr, what string) error {
	got, err := st.dig(ctx, server, name)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%s answered %s with %s, want %s (%s)", server, name, got, want, what)
	}
	return nil
}

// curl runs r, prints the command and what curl printed.
func (st *story) curl(ctx context.Context, r e2e.CurlRequest) (e2e.CurlResult, error) {
	st.cmd("curl %s", shellJoin(r.Args()))
	res, err := e2e.Curl(ctx, r)
	if err != nil {
		return res, err
	}
	if res.Stderr != "" {
		st.block(res.Stderr)
	}
	st.block(fmt.Sprintf("HTTP status: %s   (curl exit code %d)", res.Status, res.ExitCode))
	return res, nil
}

// waitAnswer waits until the cluster DNS answers name with want: `cache 30`
// in the stock Corefile may hold the previous answer for its TTL (5 s).
func (st *story) waitAnswer(ctx context.Context, name string, want netip.Addr) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := harness.PollEvery(ctx, 100*time.Millisecond, harness.AProbe(st.c.dns, name, want)); err != nil {
		return 0, fmt.Errorf("cluster DNS (log %s): %w", st.c.coredns.LogPath, err)
	}
	return time.Since(start), nil
}

func splitHostPort(hostport string) (string, string) {
	h, p, _ := net.SplitHostPort(hostport)
	return h, p
}
