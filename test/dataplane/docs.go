package dataplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/coredns-hairpin/hairpin/test/harness"
	"github.com/coredns-hairpin/hairpin/test/harness/cluster"
)

// DocsController is the ingress controller the docs write their commands
// for: the chart's default target fronts it (ingress-nginx's own names,
// `ingress-nginx/ingress-nginx-controller`, class `nginx`), and it serves
// `app.example.com`, the docs' example host. The docs test installs it for
// the pages and removes it afterwards.
var DocsController = cluster.IngressController{
	Namespace: "ingress-nginx", Class: "nginx", Hosts: []string{"app.example.com"},
	LBIP: netip.MustParseAddr("203.0.113.12"),
}

// DocPlaceholder is one row of the table that maps what a page writes for
// a user's cluster to what the docs test runs on the test cluster.
type DocPlaceholder struct {
	// Doc is the text as the page writes it; Test what runs instead.
	Doc, Test string
	// Why says why the substitution keeps the command's meaning.
	Why string
}

// DocPlaceholders is the one table of substitutions the docs test makes
// before it runs a page's command; everything else runs as written. version
// and appVersion are Chart.yaml's: a page that pins another release is not
// substituted, and its command fails (helm cannot pull it here, the node
// has no such image). dnsIP is the test cluster's kube-dns ClusterIP.
//
//	| in the docs                                                   | in the test                               |
//	|---------------------------------------------------------------|-------------------------------------------|
//	| oci://ghcr.io/coredns-hairpin/charts/coredns-hairpin --version VERSION | manifests/coredns-hairpin (this checkout) |
//	| https://github.com/coredns-hairpin/hairpin/releases/download/APPVERSION/hairpin-cluster.yaml | manifests/rendered/cluster/hairpin.yaml |
//	| https://github.com/coredns-hairpin/hairpin/releases/download/APPVERSION/hairpin-tenant.yaml  | manifests/rendered/tenant/hairpin.yaml  |
//	| https://raw.githubusercontent.com/coredns-hairpin/hairpin/APPVERSION/PATH | PATH in this checkout      |
//	| 10.43.0.10 (k3s's cluster DNS address)                        | the test cluster's kube-dns ClusterIP     |
//	| 10.96.0.10 in manifests/rendered/tenant (tenant.dnsServiceIP)  | the same, when a page's block is rendered |
//	| -n tenant-hairpin (another layout's release namespace)        | -n hairpin-system                         |
//	| --coredns-namespace dns (another layout's CoreDNS)            | --coredns-namespace kube-system           |
//
// A kubeconfig context the docs name (`--context prod`) is not
// substituted: the test's kubeconfig has it too, see [DocsContexts].
//
// Image references (ghcr.io/coredns-hairpin/coredns:APPVERSION, the client
// image docker.io/nicolaka/netshoot:v0.14) and hosts (app.example.com, see
// [DocsController]) are not substituted: the test cluster runs them as
// written.
func DocPlaceholders(version, appVersion string, dnsIP netip.Addr) []DocPlaceholder {
	release := "https://github.com/coredns-hairpin/hairpin/releases/download/" + appVersion + "/"
	return []DocPlaceholder{
		{releasedChart + " --version " + version, localChart,
			"the released chart is this checkout's chart, pushed by `make release`"},
		{release + "hairpin-cluster.yaml", "manifests/rendered/cluster/hairpin.yaml",
			"the release attaches the plain manifests of its checkout (pinned by digest)"},
		{release + "hairpin-tenant.yaml", "manifests/rendered/tenant/hairpin.yaml",
			"the same, for tenant mode"},
		{"https://raw.githubusercontent.com/coredns-hairpin/hairpin/" + appVersion + "/", "",
			"a file of the release's tag is the file of this checkout"},
		{"10.43.0.10", dnsIP.String(),
			"k3s's cluster DNS address: tenant mode's kube-dns Service takes the cluster's own"},
		{"-n tenant-hairpin", "-n " + TargetNamespace,
			"the example's release namespace is where the test cluster's release is"},
		{"--coredns-namespace dns", "--coredns-namespace kube-system",
			"the example's CoreDNS namespace is where the test cluster's CoreDNS is"},
	}
}

// DocsContexts are the kubeconfig contexts the docs name for a user's
// other clusters; the docs test's kubeconfig has each as a copy of the
// test cluster's own, so that a command with --context runs for real.
var DocsContexts = []string{"prod"}

// DocsRun runs the shell commands of the docs on a shared cluster, as a
// user runs them from a checkout: bash in the repository's root, kubectl
// built by `make tools`, helm, and kubectl-hairpin on PATH, KUBECONFIG set
// to the cluster's admin kubeconfig (with [DocsContexts]). Before a
// command it brings the cluster into the state the command assumes
// (nothing of ours installed before an install, a release before an
// upgrade), and [DocsRun.Close] leaves the cluster as [Shared] handed it
// over.
type DocsRun struct {
	e            *Env
	root, bin    string
	env          []string
	placeholders []DocPlaceholder
	dnsIP        netip.Addr
	// applied are the plain manifests (-f FILE) and overlays (-k DIR)
	// applied since the last reset.
	applied      [][2]string
	kubeDNSImage string
	hadNamespace bool
	// corefile is kube-dns's Corefile before the pages ran.
	corefile string

	// page is the page StartPage began, until EndPage; pageEnv is env
	// as it was then, which a page's `export` lines change.
	page    string
	pageEnv []string
	// jobs are the page's background commands.
	jobs []*job

	// Ordered says the page's blocks run as the steps of a runbook, in
	// its order, on a cluster of their shape: each state a command needs
	// is one the page's earlier steps brought, so no command is prepared
	// for (a check before the install must see the cluster broken).
	Ordered bool
	// StandIns run, instead of a command with a word of theirs, what
	// that command would have done to the cluster: the commands of a
	// system the test cluster does not run (talm and talosctl talk to
	// Talos nodes), whose effect the test applies as that system would.
	StandIns map[string]func(ctx context.Context, command string) error
}

// MonitoringCRDs is the folder of prometheus-operator's ServiceMonitor and
// PrometheusRule CRDs (test/manifests/testdata/crds, from its module),
// which the chart's serviceMonitor and prometheusRule values need.
func MonitoringCRDs(t testing.TB) string {
	return filepath.Join(harness.RepoDir(t), "test", "manifests", "testdata", "crds")
}

// docsInstall is the install a command that assumes one gets when the page
// has not installed anything itself: the docs' default, for DocsController.
func (d *DocsRun) docsInstall() []string {
	return []string{"install", "hairpin", d.e.Chart, "-n", TargetNamespace, "--create-namespace",
		"--set-json", `targets.ingress-nginx.zones=["example.com"]`, "--wait", "--timeout", "3m"}
}

// NewDocsRun prepares a run of the docs' commands on e, as a user runs
// them from a checkout, and changes nothing on the cluster: the pages
// whose blocks run on a cluster of their own shape
// (`<!-- docs-test: on SHAPE STEP -->`) start from it.
func (e *Env) NewDocsRun(ctx context.Context, t testing.TB) (*DocsRun, error) {
	kubectl := harness.RequireKubectl(t)
	d := &DocsRun{e: e, root: harness.RepoDir(t), bin: t.TempDir()}
	for name, path := range map[string]string{"kubectl": kubectl, "helm": e.Helm.Bin, "kubectl-hairpin": filepath.Join(e.bin, "kubectl-hairpin")} {
		if err := os.Symlink(path, filepath.Join(d.bin, name)); err != nil {
			return nil, fmt.Errorf("docs: %w", err)
		}
	}
	home := t.TempDir()
	kubeconfig := filepath.Join(home, "kubeconfig")
	if err := writeKubeconfigWithContexts(e.CP.Kubeconfig, kubeconfig, DocsContexts...); err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	d.env = append([]string{
		"PATH=" + d.bin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + home, "KUBECONFIG=" + kubeconfig, "LANG=C.UTF-8",
	}, e.Helm.Env()...)
	cs := e.CP.Clientset
	dns, err := cs.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	d.dnsIP, err = netip.ParseAddr(dns.Spec.ClusterIP)
	if err != nil {
		return nil, fmt.Errorf("docs: kube-dns ClusterIP: %w", err)
	}
	d.placeholders = DocPlaceholders(e.chartField("version"), e.appVersion(), d.dnsIP)
	dep, err := cs.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	d.kubeDNSImage = dep.Spec.Template.Spec.Containers[0].Image
	cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	d.corefile = cm.Data["Corefile"]
	_, err = cs.CoreV1().Namespaces().Get(ctx, TargetNamespace, metav1.GetOptions{})
	d.hadNamespace = err == nil
	return d, nil
}

// StartDocs prepares e for the docs: DocsController, the prometheus-operator
// CRDs a page's values turn on, and the cluster's two controllers marked
// `ipMode: Proxy` (as a proxying cloud load balancer marks them), so that
// `kubectl hairpin check` after a page's install judges only what the page
// installed.
func (e *Env) StartDocs(ctx context.Context, t testing.TB) (*DocsRun, error) {
	d, err := e.NewDocsRun(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := e.InstallIngressController(ctx, DocsController); err != nil {
		return d, err
	}
	// The bug the pages fix, once: a Pod's request to the docs' host is
	// short-circuited to the controller without a header, and nginx logs
	// "broken header" (troubleshooting.md greps for it).
	if err := e.WaitResolves(ctx, DocsController.Hosts[0], DocsController.LBIP); err != nil {
		return d, err
	}
	if _, err := e.WaitServedFromOutside(ctx, DocsController, DocsController.Hosts[0]); err != nil {
		return d, err
	}
	if err := harness.Poll(ctx, func(ctx context.Context) error {
		_, _ = e.Curl(ctx, "http://"+DocsController.Hosts[0]+"/")
		log, err := e.ErrorLog(ctx, DocsController)
		if err != nil || !strings.Contains(log, "broken header") {
			return fmt.Errorf("no broken header in %s's log yet (%v)", DocsController.Namespace, err)
		}
		return nil
	}); err != nil {
		return d, err
	}
	for _, ic := range Controllers {
		if err := e.SetIPMode(ctx, ic, corev1.LoadBalancerIPModeProxy); err != nil {
			return d, err
		}
	}
	if _, err := d.kubectl(ctx, "apply", "--server-side", "-f", MonitoringCRDs(t)); err != nil {
		return d, err
	}
	return d, nil
}

// Leftovers of the controllers that docs/migrate.md replaces, as they
// write them: ouroboros's marked block in the Corefile (its coredns mode),
// its ouroboros.override key of coredns-custom (its coredns-import mode),
// and compumike/hairpin-proxy's line.
const (
	ouroborosBlock = "    # === BEGIN ouroboros (do not edit by hand) ===\n" +
		"    rewrite name app.example.com ouroboros-proxy.ouroboros.svc.cluster.local.\n" +
		"    # === END ouroboros ===\n"
	ouroborosOverride    = "rewrite name app.example.com ouroboros-proxy.ouroboros.svc.cluster.local.\n"
	hairpinProxyLeftover = "rewrite name app.example.com hairpin-proxy.hairpin-proxy.svc.cluster.local # Added by hairpin-proxy\n"
	customConfigMap      = "coredns-custom"
)

// docPage is what a page assumes beyond the broken cluster of StartDocs:
// start brings it before the page's first command, end takes it away
// after its last one, so that the next page, and the cluster [Shared]
// hands on, find the cluster as it was.
type docPage struct {
	start, end func(*DocsRun, context.Context) error
}

// docPages holds the pages that assume more than StartDocs gives.
var docPages = map[string]docPage{
	// docs/migrate.md finds and removes what the controllers it replaces
	// left behind, so they are there; Close restores kube-dns's Corefile
	// and removes coredns-custom. The page's removal is live only once
	// every replica has reloaded (its reload plugin, up to a minute later),
	// so the page ends when every replica answers the docs' host publicly
	// again, not with the leftover rewrite: the next page asks for it.
	"docs/migrate.md": {start: (*DocsRun).leaveReplacedControllers, end: (*DocsRun).waitLeftoversGone},
	// The page's example values give a direct target a Service in the
	// Gateway's namespace, where the chart puts the Role that lets CoreDNS
	// read it: helm installs that Role into an existing namespace only.
	"docs/gateway-api.md": {
		start: func(d *DocsRun, ctx context.Context) error { return d.createNamespace(ctx, gatewaysNamespace) },
		end:   func(d *DocsRun, ctx context.Context) error { return d.deleteNamespaces(ctx, gatewaysNamespace) },
	},
}

// gatewaysNamespace is the Gateway's namespace of
// manifests/coredns-hairpin/examples/direct-target.yaml.
const gatewaysNamespace = "gateways"

// The Cozystack tenant of docs/install/cozystack.md: its namespace on the
// management cluster, the Secret Kamaji writes there for the tenant's
// control plane (TenantControlPlane kubernetes-foo), and the file the page
// saves its admin.conf to.
const (
	tenantNamespace  = "tenant-foo"
	tenantSecret     = "kubernetes-foo-admin-kubeconfig"
	tenantKubeconfig = "foo-admin.conf"
)

// StartPage brings the cluster into the state page starts from.
func (d *DocsRun) StartPage(ctx context.Context, page string) error {
	d.page, d.pageEnv = page, slices.Clone(d.env)
	if p := docPages[page]; p.start != nil {
		return p.start(d, ctx)
	}
	return nil
}

// EndPage ends the page StartPage began: it stops the page's background
// jobs, forgets its exports, removes what its commands installed (see
// [DocsRun.Reset]) and what its start brought. With no page begun it
// only resets.
func (d *DocsRun) EndPage(ctx context.Context) error {
	errs := []error{d.stopJobs()}
	page := d.page
	if page != "" {
		d.env, d.page, d.pageEnv = d.pageEnv, "", nil
	}
	errs = append(errs, d.Reset(ctx))
	if p := docPages[page]; p.end != nil {
		errs = append(errs, p.end(d, ctx))
	}
	return errors.Join(errs...)
}

// leaveReplacedControllers writes into kube-dns's configuration what
// ouroboros and compumike/hairpin-proxy leave there.
func (d *DocsRun) leaveReplacedControllers(ctx context.Context) error {
	cms := d.e.CP.Clientset.CoreV1().ConfigMaps("kube-system")
	cm, err := cms.Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm.Data["Corefile"] = strings.Replace(d.corefile, "    errors\n", "    errors\n"+ouroborosBlock, 1)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return err
	}
	_, err = cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: customConfigMap, Namespace: "kube-system"},
		Data:       map[string]string{"ouroboros.override": ouroborosOverride, "hairpin-proxy.override": hairpinProxyLeftover},
	}, metav1.CreateOptions{})
	return err
}

// waitLeftoversGone waits until every kube-dns replica answers the docs'
// host with its public address: the rewrites that docs/migrate.md removes
// are gone from what CoreDNS serves.
func (d *DocsRun) waitLeftoversGone(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := d.e.WaitResolves(ctx, DocsController.Hosts[0], DocsController.LBIP); err != nil {
		return fmt.Errorf("docs: after docs/migrate.md, %s still does not resolve to its public %s at every kube-dns replica (a leftover rewrite?): %w", DocsController.Hosts[0], DocsController.LBIP, err)
	}
	return nil
}

// WriteTenantKubeconfig makes the test cluster a Cozystack tenant of
// itself, as docs/install/cozystack.md's tenant section needs it: the
// page reads the tenant's admin kubeconfig out of the Secret that Kamaji
// writes for its control plane, in the tenant's namespace, into a file in
// the working directory (the checkout here); the Secret holds the test
// cluster's admin kubeconfig under admin.conf and super-admin.conf.
func (d *DocsRun) WriteTenantKubeconfig(ctx context.Context) error {
	kubeconfig, err := os.ReadFile(d.e.CP.Kubeconfig)
	if err != nil {
		return fmt.Errorf("docs: %w", err)
	}
	if err := d.createNamespace(ctx, tenantNamespace); err != nil {
		return err
	}
	_, err = d.e.CP.Clientset.CoreV1().Secrets(tenantNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: tenantSecret, Namespace: tenantNamespace},
		Data:       map[string][]byte{"admin.conf": kubeconfig, "super-admin.conf": kubeconfig},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("docs: the tenant's kubeconfig Secret: %w", err)
	}
	return nil
}

// RemoveTenantKubeconfig removes the tenant's namespace and the file the
// page saved its kubeconfig to.
func (d *DocsRun) RemoveTenantKubeconfig(ctx context.Context) error {
	err := os.Remove(filepath.Join(d.root, tenantKubeconfig))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return errors.Join(err, d.deleteNamespaces(ctx, tenantNamespace))
}

// The released chart's reference, and the chart of this checkout that
// the docs test installs in its place.
const (
	releasedChart = "oci://ghcr.io/coredns-hairpin/charts/coredns-hairpin"
	localChart    = "manifests/coredns-hairpin"
)

// pastedChart is the released chart as `kubectl hairpin check` names it in
// the install command it prints: with the version of its own build, none
// for a build of a checkout.
var pastedChart = regexp.MustCompile(regexp.QuoteMeta(releasedChart) + `( --version [^ ]+)?`)

// SubstitutePasted maps a command pasted from `kubectl hairpin check`'s
// hints as [DocPlaceholders] maps a page's: the released chart, at
// whatever version the check's build names, is this checkout's.
func (d *DocsRun) SubstitutePasted(command string) string {
	return pastedChart.ReplaceAllLiteralString(command, localChart)
}

// Placeholders returns the table the run substitutes with.
func (d *DocsRun) Placeholders() []DocPlaceholder { return d.placeholders }

// Substitute applies the placeholder table to a command.
func (d *DocsRun) Substitute(command string) string {
	for _, p := range d.placeholders {
		command = strings.ReplaceAll(command, p.Doc, p.Test)
	}
	return command
}

// Run runs one command of a page, substituted, with bash -o pipefail, and
// returns its output. It first brings the cluster into the state the
// command assumes. As in the user's shell, a command that ends with `&`
// runs on in the background (see [DocsRun.startJob]), and the variables
// an `export` line sets are set for the page's next commands.
func (d *DocsRun) Run(ctx context.Context, command string) (string, error) {
	command = d.Substitute(command)
	words, err := harness.ShellWords(command)
	if err != nil {
		return "", err
	}
	for _, w := range words {
		if f := d.StandIns[w]; f != nil {
			return "", f(ctx, command)
		}
	}
	if !d.Ordered {
		if err := d.prepare(ctx, words); err != nil {
			return "", err
		}
	}
	if bg, ok := harness.ShellBackground(command); ok {
		return d.startJob(bg)
	}
	out, err := d.bash(ctx, command)
	switch {
	case err == nil:
	case isCheck(words):
		// Right after an install the check is right to fail for a while,
		// and the pages say so: the proxy's Pods are not Ready yet, and
		// CoreDNS's informers, refused until the chart's RBAC existed,
		// retry with client-go's backoff of up to 30 s.
		out, err = d.retry(ctx, command, 5*time.Second, 60*time.Second, nil)
	case slices.Contains(words, "dig") && len(words) > 2 && words[1] == "run":
		// A Service created with the Deployment that rollout status has
		// just seen ready may not be in kube-proxy's rules yet (its sync
		// follows the EndpointSlice by up to its min sync period, 1 s):
		// dig, without an answer (refused), exits 9. A user typing the
		// next line is slower; a wrong answer still fails at once. Each
		// try waits until the Pod the last one's --rm deleted is gone.
		out, err = d.retry(ctx, command, time.Second, 20*time.Second, func(ctx context.Context) error {
			return d.waitPodGone(ctx, words[2])
		})
	}
	if err != nil {
		return out, err
	}
	d.record(words)
	if err := d.export(ctx, command, words); err != nil {
		return out, err
	}
	return out, d.checkAnswer(ctx, words, out)
}

// export sets the variables an `export NAME=VALUE` line sets in the
// run's environment, with their values as bash expands them. The docs'
// exports are assignments, so running the line again to read them
// changes nothing.
func (d *DocsRun) export(ctx context.Context, command string, words []string) error {
	if len(words) < 2 || words[0] != "export" {
		return nil
	}
	for _, w := range words[1:] {
		name, _, ok := strings.Cut(w, "=")
		if !ok {
			continue
		}
		value, errOut, err := d.exec(ctx, nil, "/bin/bash", "-c", command+"\nprintf %s \"$"+name+"\"")
		if err != nil {
			return fmt.Errorf("docs: the value of %s: %w: %s", name, err, errOut)
		}
		d.env = slices.DeleteFunc(d.env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
		d.env = append(d.env, name+"="+value)
	}
	return nil
}

// jobReady is how long a background job of a page may take to say it is
// up.
const jobReady = 30 * time.Second

// job is a command of a page that runs in the background until the page
// ends, as `&` runs it in the user's shell.
type job struct {
	cmd  *exec.Cmd
	out  *lineBuffer
	done chan struct{}
	err  error // once done is closed
}

// startJob starts a page's background command and waits until it has
// written a line: a job of the docs is a server the page's next commands
// talk to (kubectl port-forward), and the user waits for it to say where
// it listens ("Forwarding from 127.0.0.1:9090 -> 9090") as the next
// command could not connect before. A job that fails before it writes
// fails the command; [DocsRun.EndPage] stops the job, which is not run
// in the page's context (that ends with the command).
func (d *DocsRun) startJob(command string) (string, error) {
	cmd := exec.Command("/bin/bash", "-o", "pipefail", "-c", command)
	cmd.Dir, cmd.Env = d.root, d.env
	out := &lineBuffer{line: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so that stopping it stops what bash started
	// too; and gone with the test if the test is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("docs: %s &: %w", command, err)
	}
	j := &job{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		j.err = cmd.Wait()
		close(j.done)
	}()
	d.jobs = append(d.jobs, j)
	select {
	case <-out.line:
		return out.String(), nil
	case <-j.done:
		if j.err != nil {
			return out.String(), fmt.Errorf("docs: %s &: %w", command, j.err)
		}
		return out.String(), nil
	case <-time.After(jobReady):
		return out.String(), fmt.Errorf("docs: %s &: wrote nothing in %s", command, jobReady)
	}
}

// stopJobs stops the page's background jobs: SIGTERM to each one's
// process group, SIGKILL after a grace period. A job that ended before is
// no error, as in a shell, where nothing waits for its status.
func (d *DocsRun) stopJobs() error {
	var errs []error
	for _, j := range d.jobs {
		pgid := j.cmd.Process.Pid
		select {
		case <-j.done:
			continue
		default:
		}
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-j.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			select {
			case <-j.done:
			case <-time.After(5 * time.Second):
				errs = append(errs, fmt.Errorf("docs: background job %q (pid %d) does not end", j.cmd.Args[len(j.cmd.Args)-1], pgid))
			}
		}
	}
	d.jobs = nil
	return errors.Join(errs...)
}

// lineBuffer collects a job's output and tells when the first line is
// complete.
type lineBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	line chan struct{}
	seen bool
}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if !b.seen && bytes.IndexByte(p, '\n') >= 0 {
		b.seen = true
		close(b.line)
	}
	return len(p), nil
}

func (b *lineBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// isCheck reports whether words run `kubectl hairpin check`.
func isCheck(words []string) bool {
	return len(words) > 2 && words[0] == "kubectl" && words[1] == "hairpin" && words[2] == "check"
}

// retry runs a command that failed again, every interval for up to
// limit, until it succeeds; before, if not nil, readies the cluster for
// each try. A command that still fails after that fails the page.
func (d *DocsRun) retry(ctx context.Context, command string, interval, limit time.Duration, before func(context.Context) error) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var out string
	err := harness.PollEvery(ctx, interval, func(ctx context.Context) error {
		if before != nil {
			if err := before(ctx); err != nil {
				return err
			}
		}
		var err error
		out, err = d.bash(ctx, command)
		return err
	})
	return out, err
}

// checkAnswer holds a `dig` of the docs' host to what the page says it
// shows: the ClusterIP of the target that fronts the host's controller.
// Any other answer (the load balancer's IP: hairpin not working) fails.
func (d *DocsRun) checkAnswer(ctx context.Context, words []string, out string) error {
	if !slices.Contains(words, "dig") || !slices.Contains(words, DocsController.Hosts[0]) {
		return nil
	}
	svc, err := d.e.CP.Clientset.CoreV1().Services(TargetNamespace).Get(ctx, "ingress-nginx", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("docs: the target of %s: %w", DocsController.Hosts[0], err)
	}
	if got := strings.Fields(out); !slices.Contains(got, svc.Spec.ClusterIP) {
		return fmt.Errorf("docs: %s resolved to %v; want the target's ClusterIP %s", DocsController.Hosts[0], got, svc.Spec.ClusterIP)
	}
	return nil
}

// tenantDefaultDNSIP is the chart's default tenant.dnsServiceIP, which the
// rendered tenant manifests carry.
const tenantDefaultDNSIP = "10.96.0.10"

// Render validates a documented install against the cluster without
// installing it, for an example that the shared cluster cannot run (tenant
// mode brings a second kube-dns; a placeholder registry has no images): a
// helm install or upgrade becomes `helm template` with the same flags, its
// output applied with `kubectl apply --dry-run=server` (tenant mode's
// Service taking the cluster's kube-dns address); a kubectl apply runs with
// --dry-run=server.
func (d *DocsRun) Render(ctx context.Context, command string) (string, error) {
	command = d.Substitute(command)
	words, err := harness.ShellWords(command)
	if err != nil {
		return "", err
	}
	if len(words) > 2 && words[0] == "kubectl" && slices.Contains(words, "apply") {
		if err := d.ensureNamespace(ctx); err != nil {
			return "", err
		}
		// Tenant mode's plain manifests carry the chart's default
		// tenant.dnsServiceIP; its kube-dns Service takes the cluster's
		// own address, as tenant.dnsServiceIP does for the chart.
		if f := manifestArg(words, "-f"); strings.HasPrefix(f, "manifests/rendered/tenant/") {
			b, err := os.ReadFile(filepath.Join(d.root, f))
			if err != nil {
				return "", err
			}
			tmp := filepath.Join(d.bin, "tenant.yaml")
			if err := os.WriteFile(tmp, []byte(strings.ReplaceAll(string(b), tenantDefaultDNSIP, d.dnsIP.String())), 0o644); err != nil {
				return "", err
			}
			command = strings.Replace(command, f, tmp, 1)
		}
		// A dry run writes nothing, so the field conflicts a server-side
		// apply would have with the test cluster's own kube-dns objects
		// (tenant mode's plain manifests) are forced.
		if slices.Contains(words, "--server-side") {
			command += " --force-conflicts"
		}
		return d.bash(ctx, command+" --dry-run=server")
	}
	if len(words) < 4 || words[0] != "helm" || (words[1] != "install" && words[1] != "upgrade") {
		return "", fmt.Errorf("docs: only a helm install or upgrade or a kubectl apply can be rendered, not %q", command)
	}
	args := []string{"template"}
	for _, w := range words[2:] {
		switch w {
		case "--reuse-values", "--reset-then-reuse-values":
			// The values of the install before it: the docs' default.
			args = append(args, "--set-json", `targets.ingress-nginx.zones=["example.com"]`)
			continue
		case "--create-namespace", "--wait", "--atomic":
			continue
		}
		args = append(args, w)
	}
	args = append(args, "--set", "tenant.dnsServiceIP="+d.dnsIP.String())
	rendered, errOut, err := d.exec(ctx, nil, filepath.Join(d.bin, "helm"), args...)
	if err != nil {
		return rendered + errOut, err
	}
	if err := d.ensureNamespace(ctx); err != nil {
		return "", err
	}
	return d.kubectlIn(ctx, []byte(rendered), "apply", "--dry-run=server", "-f", "-")
}

// prepare brings the cluster into the state the command words assume.
func (d *DocsRun) prepare(ctx context.Context, words []string) error {
	switch {
	case installsOurs(words):
		for _, flag := range []string{"-f", "-k"} {
			if f := manifestArg(words, flag); f != "" && slices.Contains(d.applied, [2]string{flag, f}) {
				return nil // applied again: an upgrade
			}
		}
		return d.Reset(ctx)
	case isHelm(words, "upgrade", "uninstall"):
		return d.ensureRelease(ctx)
	case slices.Contains(words, "delete") || slices.Contains(words, "diff"):
		if f := manifestArg(words, "-f"); f != "" {
			if slices.Contains(d.applied, [2]string{"-f", f}) {
				return nil
			}
			if err := d.Reset(ctx); err != nil {
				return err
			}
			if _, err := d.kubectl(ctx, "apply", "--server-side", "-f", f); err != nil {
				return err
			}
			d.applied = append(d.applied, [2]string{"-f", f})
		}
		return nil
	case assumesInstall(words):
		if len(words) > 2 && words[0] == "kubectl" && words[1] == "run" {
			if err := d.waitPodGone(ctx, words[2]); err != nil {
				return err
			}
		}
		return d.ensureAnything(ctx)
	}
	return nil
}

// waitPodGone waits until the Pod a previous `kubectl run --rm` of the
// same name deleted is gone: kubectl does not wait for it.
func (d *DocsRun) waitPodGone(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return harness.Poll(ctx, func(ctx context.Context) error {
		if _, err := d.e.CP.Clientset.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod default/%s is still there (%v)", name, err)
		}
		return nil
	})
}

// record notes what a command that succeeded installed or removed.
func (d *DocsRun) record(words []string) {
	switch {
	case len(words) > 1 && words[0] == "kubectl" && slices.Contains(words, "apply") && !slices.Contains(words, "--dry-run=server"):
		for _, flag := range []string{"-f", "-k"} {
			if f := manifestArg(words, flag); f != "" {
				d.applied = append(d.applied, [2]string{flag, f})
			}
		}
	case len(words) > 1 && words[0] == "kubectl" && slices.Contains(words, "delete"):
		if f := manifestArg(words, "-f"); f != "" {
			d.applied = slices.DeleteFunc(d.applied, func(a [2]string) bool { return a[1] == f })
		}
	}
}

// isHelm reports whether words run helm with one of verbs on our release.
func isHelm(words []string, verbs ...string) bool {
	return len(words) > 2 && words[0] == "helm" && slices.Contains(verbs, words[1]) && words[2] == "hairpin"
}

// installsOurs reports whether words install the chart or apply our plain
// manifests or an overlay of them: the alternative ways to install, each
// of which starts from a cluster without the others. (An add-on a page
// applies next to an install, such as docs/examples/separate-coredns.yaml,
// is not one.)
func installsOurs(words []string) bool {
	if isHelm(words, "install") {
		return true
	}
	if len(words) < 2 || words[0] != "kubectl" || !slices.Contains(words, "apply") || slices.Contains(words, "--dry-run=server") {
		return false
	}
	for _, flag := range []string{"-f", "-k"} {
		if f := manifestArg(words, flag); strings.HasPrefix(f, "manifests/rendered/") || flag == "-k" && f != "" {
			return true
		}
	}
	return false
}

// assumesInstall reports whether words need something of ours installed:
// they look at the proxy or the targets, check, or ask a Pod for a
// hairpin answer.
func assumesInstall(words []string) bool {
	for _, w := range words {
		if strings.Contains(w, "hairpin-proxy") || strings.Contains(w, "hairpin.coredns-hairpin.io/target") || w == "hairpin" {
			return true
		}
	}
	return len(words) > 1 && words[0] == "kubectl" && words[1] == "run"
}

// manifestArg returns the value of flag when it names our plain manifests
// or an overlay of them (a path under manifests/rendered or docs/examples).
func manifestArg(words []string, flag string) string {
	for i, w := range words {
		if w == flag && i+1 < len(words) {
			v := words[i+1]
			if strings.HasPrefix(v, "manifests/rendered/") || strings.HasPrefix(v, "docs/examples/") {
				return v
			}
		}
	}
	return ""
}

// ensureRelease installs the docs' default release unless one is installed.
func (d *DocsRun) ensureRelease(ctx context.Context) error {
	out, err := d.e.Helm.Run(ctx, "list", "-n", TargetNamespace, "-q")
	if err != nil {
		return err
	}
	if slices.Contains(strings.Fields(out), "hairpin") {
		return nil
	}
	if err := d.Reset(ctx); err != nil {
		return err
	}
	_, err = d.e.Helm.Run(ctx, d.docsInstall()...)
	return err
}

// ensureAnything installs the docs' default release unless a release or
// the plain manifests are installed.
func (d *DocsRun) ensureAnything(ctx context.Context) error {
	if len(d.applied) > 0 {
		return nil
	}
	return d.ensureRelease(ctx)
}

// Reset removes what the pages installed: every release in the targets
// namespace and the manifests they applied, and waits until nothing of
// the chart is left.
func (d *DocsRun) Reset(ctx context.Context) error {
	d.e.uninstallAll()
	var errs []error
	for _, a := range slices.Backward(d.applied) {
		if _, err := d.kubectl(ctx, "delete", "--ignore-not-found", "--wait", a[0], a[1]); err != nil {
			errs = append(errs, err)
		}
	}
	d.applied = nil
	if err := errors.Join(errs...); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return d.e.WaitNothingLeft(ctx)
}

// Close leaves the cluster as StartDocs found it: nothing of ours
// installed, kube-dns on its image, DocsController and the CRDs gone, the
// controllers' ipMode back to VIP.
func (d *DocsRun) Close(ctx context.Context) error {
	cs := d.e.CP.Clientset
	errs := []error{d.EndPage(ctx)}
	if d.kubeDNSImage != "" {
		dep, err := cs.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		if err == nil && dep.Spec.Template.Spec.Containers[0].Image != d.kubeDNSImage {
			dep.Spec.Template.Spec.Containers[0].Image = d.kubeDNSImage
			if _, err = cs.AppsV1().Deployments("kube-system").Update(ctx, dep, metav1.UpdateOptions{}); err == nil {
				err = d.e.WaitDeployment(ctx, "kube-system", "coredns")
			}
		}
		errs = append(errs, err)
	}
	for _, ic := range Controllers {
		errs = append(errs, d.e.SetIPMode(ctx, ic, corev1.LoadBalancerIPModeVIP))
	}
	cms := cs.CoreV1().ConfigMaps("kube-system")
	if cm, err := cms.Get(ctx, "coredns", metav1.GetOptions{}); err != nil {
		errs = append(errs, err)
	} else if cm.Data["Corefile"] != d.corefile {
		errs = append(errs, d.e.ApplyAndReload(ctx, d.corefile))
	}
	if err := cms.Delete(ctx, customConfigMap, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	_, err := d.kubectl(ctx, "delete", "--ignore-not-found", "-f", filepath.Join(d.root, "test", "manifests", "testdata", "crds"))
	errs = append(errs, err)
	if err := cs.NetworkingV1().IngressClasses().Delete(ctx, DocsController.Class, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	namespaces := []string{DocsController.Namespace}
	if !d.hadNamespace {
		namespaces = append(namespaces, TargetNamespace)
	}
	errs = append(errs, d.deleteNamespaces(ctx, namespaces...))
	return errors.Join(errs...)
}

// deleteNamespaces deletes namespaces and waits until they are gone.
func (d *DocsRun) deleteNamespaces(ctx context.Context, namespaces ...string) error {
	cs := d.e.CP.Clientset
	var errs []error
	for _, ns := range namespaces {
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("docs: %w", err))
		}
	}
	errs = append(errs, harness.Poll(ctx, func(ctx context.Context) error {
		for _, ns := range namespaces {
			if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("namespace %s is still there (%v)", ns, err)
			}
		}
		return nil
	}))
	return errors.Join(errs...)
}

// ensureNamespace creates the targets namespace if it is missing, as
// `--create-namespace` would.
func (d *DocsRun) ensureNamespace(ctx context.Context) error {
	return d.createNamespace(ctx, TargetNamespace)
}

// createNamespace creates a namespace unless it exists.
func (d *DocsRun) createNamespace(ctx context.Context, name string) error {
	_, err := d.e.CP.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("docs: %w", err)
	}
	return nil
}

// writeKubeconfigWithContexts writes the kubeconfig src to dst with each
// of contexts added as a copy of src's current context.
func writeKubeconfigWithContexts(src, dst string, contexts ...string) error {
	cfg, err := clientcmd.LoadFromFile(src)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	current, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return fmt.Errorf("kubeconfig %s: no current context", src)
	}
	for _, name := range contexts {
		cfg.Contexts[name] = current.DeepCopy()
	}
	if err := clientcmd.WriteToFile(*cfg, dst); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	return nil
}

func (d *DocsRun) kubectl(ctx context.Context, args ...string) (string, error) {
	return d.kubectlIn(ctx, nil, args...)
}

// kubectlIn runs kubectl with stdin and returns its stdout and stderr.
func (d *DocsRun) kubectlIn(ctx context.Context, stdin []byte, args ...string) (string, error) {
	out, errOut, err := d.exec(ctx, stdin, filepath.Join(d.bin, "kubectl"), args...)
	return out + errOut, err
}

// bash runs a command line as a user's shell does, with pipefail: a
// pipeline fails when any of its commands does.
func (d *DocsRun) bash(ctx context.Context, command string) (string, error) {
	out, errOut, err := d.exec(ctx, nil, "/bin/bash", "-o", "pipefail", "-c", command)
	return out + errOut, err
}

// exec runs name in the repository's root with the run's environment.
func (d *DocsRun) exec(ctx context.Context, stdin []byte, name string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = d.root, d.env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String(), fmt.Errorf("%s %s: %w", filepath.Base(name), strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), nil
}
