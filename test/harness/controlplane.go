package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness/netns"
	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// ControlPlaneOptions configures [StartControlPlane].
type ControlPlaneOptions struct {
	// AssetsDir holds kube-apiserver and etcd. Default: $KUBEBUILDER_ASSETS.
	AssetsDir string
	// Dir receives the kubeconfig, the apiserver's certificates and the
	// control plane's logs. Default: a new temporary folder, removed by Stop.
	Dir string
	// GatewayAPI, when set to [GatewayStandard] or [GatewayExperimental],
	// installs that channel's Gateway API CRDs before Start returns.
	GatewayAPI string
	// CRDDirs are further folders of CRD manifests to install.
	CRDDirs []string
	// APIServerFlags are extra kube-apiserver flags ("name" without dashes to
	// values); they override the harness defaults.
	APIServerFlags map[string][]string
	// StartTimeout bounds the start of each component. Default: 60s.
	StartTimeout time.Duration

	// Netns, when set, runs etcd and kube-apiserver inside that network
	// namespace, as a control-plane node runs them on its host network:
	// kube-apiserver listens on every address there, so Pods reach it
	// through the kubernetes Service and it reaches Pods (pod proxy, logs).
	// The test process reaches both through forwarders on the same
	// loopback ports of its own namespace, so Config, Kubeconfig and
	// envtest work unchanged.
	Netns *netns.NS
	// ServiceCIDR is the Service cluster IP range. Default: [ServiceCIDR].
	ServiceCIDR netip.Prefix
	// AdvertiseAddress is the apiserver address the kubernetes Service's
	// endpoints name (with Netns: the node's address).
	AdvertiseAddress netip.Addr
	// ServingIPs are further IP addresses the apiserver's serving
	// certificate is valid for (with Netns: the kubernetes Service's
	// ClusterIP); the certificate then comes from the harness, and
	// [ControlPlane.CAFile] holds its CA.
	ServingIPs []netip.Addr
}

// ControlPlane is a running kube-apiserver and etcd (envtest), with an admin
// client and a kubeconfig file. Services get ClusterIPs from [ServiceCIDR].
type ControlPlane struct {
	// Env is the underlying envtest environment.
	Env *envtest.Environment
	// Config is an admin (system:masters) REST config.
	Config *rest.Config
	// Clientset is a typed admin client.
	Clientset *kubernetes.Clientset
	// Kubeconfig is the path of an admin kubeconfig file (one context,
	// "envtest"), for coredns's `kubeconfig PATH` and for kubectl.
	Kubeconfig string
	// Dir is the control plane's working folder (see ControlPlaneOptions.Dir).
	Dir string
	// CAFile is the PEM file of the CA that signed the apiserver's serving
	// certificate, when the harness made it (ControlPlaneOptions.ServingIPs),
	// for kube-controller-manager's --root-ca-file.
	CAFile string
	// ServiceAccountKeyFile is the private key the apiserver signs
	// service-account tokens with.
	ServiceAccountKeyFile string

	forwarders []*netns.Forwarder
	// ns and apiserverBin are the namespace kube-apiserver runs in and the
	// binary its wrapper execs, in ControlPlaneOptions.Netns mode.
	ns           *netns.NS
	apiserverBin string

	ownDir  bool
	logs    []*os.File
	mu      sync.Mutex
	stopped bool
}

var setLoggerOnce sync.Once

// NewControlPlane starts a control plane for t, or skips t (fails it under
// HAIRPIN_REQUIRE_E2E=1) when KUBEBUILDER_ASSETS is unset. It is stopped in
// t.Cleanup, and the tail of the apiserver's and etcd's logs is printed when t
// failed. Stop your informers before the test returns (see the package doc).
func NewControlPlane(t testing.TB, opts ControlPlaneOptions) *ControlPlane {
	t.Helper()
	if opts.AssetsDir == "" {
		opts.AssetsDir = RequireAssets(t)
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	start := time.Now()
	cp, err := StartControlPlane(opts)
	if err != nil {
		dumpLogs(t, opts.Dir)
		t.Fatalf("harness: %v", err)
	}
	t.Logf("harness: control plane up at %s in %s (kubeconfig %s)", cp.Config.Host, time.Since(start).Round(time.Millisecond), cp.Kubeconfig)
	t.Cleanup(func() {
		start := time.Now()
		if err := cp.Stop(); err != nil {
			t.Errorf("harness: stop control plane: %v", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Logf("harness: stopping the control plane took %s; stop informers before the test ends", d.Round(time.Millisecond))
		}
		if t.Failed() {
			dumpLogs(t, cp.Dir)
		}
	})
	return cp
}

// StartControlPlane starts etcd and kube-apiserver with
// --service-cluster-ip-range=127.77.0.0/16 on a fixed loopback port, installs
// the requested CRDs, writes an admin kubeconfig and returns once the default
// namespace exists. Call Stop when done. Use it where no testing.TB is at
// hand (TestMain, demos); tests use [NewControlPlane].
func StartControlPlane(opts ControlPlaneOptions) (_ *ControlPlane, retErr error) {
	setLoggerOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	if opts.AssetsDir == "" {
		opts.AssetsDir = os.Getenv(EnvAssets)
		if opts.AssetsDir == "" {
			return nil, fmt.Errorf("control plane: %s is not set", EnvAssets)
		}
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	cp := &ControlPlane{Dir: opts.Dir}
	if cp.Dir == "" {
		d, err := os.MkdirTemp("", "hairpin-controlplane-")
		if err != nil {
			return nil, fmt.Errorf("control plane: %w", err)
		}
		cp.Dir, cp.ownDir = d, true
	}
	defer func() {
		if retErr != nil {
			cp.closeForwarders()
			cp.closeLogs()
			if cp.ownDir {
				os.RemoveAll(cp.Dir)
			}
		}
	}()

	// A fixed CertDir that we own survives StopAPIServer, so a restarted
	// apiserver keeps its serving certificate, its port (envtest picks it
	// once) and its trust in our client certificates.
	certDir := filepath.Join(cp.Dir, "apiserver")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	apiLog, err := cp.openLog("kube-apiserver.log")
	if err != nil {
		return nil, err
	}
	etcdLog, err := cp.openLog("etcd.log")
	if err != nil {
		return nil, err
	}
	apiserver := &envtest.APIServer{CertDir: certDir, Out: apiLog, Err: apiLog}
	etcd := &envtest.Etcd{Out: etcdLog, Err: etcdLog}
	flags := apiserver.Configure()
	serviceCIDR := ServiceCIDR
	if opts.ServiceCIDR.IsValid() {
		serviceCIDR = opts.ServiceCIDR
	}
	flags.Set("service-cluster-ip-range", serviceCIDR.String())
	if opts.AdvertiseAddress.IsValid() {
		flags.Set("advertise-address", opts.AdvertiseAddress.String())
	} else {
		// Outside a namespace of the test's own, the apiserver would name
		// the machine's own address as the kubernetes Service's endpoint,
		// and a client that goes around that Service (the plugin after an
		// outage) would dial it: no endpoints at all.
		flags.Set("endpoint-reconciler-type", "none")
	}
	if len(opts.ServingIPs) > 0 {
		if err := cp.servingCert(apiserver, certDir, opts); err != nil {
			return nil, err
		}
	}
	cp.ServiceAccountKeyFile = filepath.Join(certDir, "sa-signer.key")
	assets := opts.AssetsDir
	if opts.Netns != nil {
		if assets, err = cp.inNamespace(opts.Netns, assets, apiserver, etcd); err != nil {
			return nil, err
		}
	}
	for name, values := range opts.APIServerFlags {
		flags.Set(name, values...)
	}

	crdDirs := append([]string(nil), opts.CRDDirs...)
	if opts.GatewayAPI != "" {
		dir, err := GatewayAPICRDDir(opts.GatewayAPI)
		if err != nil {
			return nil, fmt.Errorf("control plane: %w", err)
		}
		crdDirs = append(crdDirs, dir)
	}

	cp.Env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		ControlPlane: envtest.ControlPlane{
			APIServer: apiserver,
			Etcd:      etcd,
		},
		CRDDirectoryPaths:        crdDirs,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: opts.StartTimeout,
		CRDInstallOptions:        envtest.CRDInstallOptions{MaxTime: opts.StartTimeout},
	}
	if cp.Config, err = cp.Env.Start(); err != nil {
		_ = cp.Env.Stop()
		return nil, fmt.Errorf("control plane: start (logs in %s): %w", cp.Dir, err)
	}
	defer func() {
		if retErr != nil {
			_ = cp.Env.Stop()
		}
	}()
	if cp.Clientset, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return nil, fmt.Errorf("control plane: clientset: %w", err)
	}
	cp.Kubeconfig = filepath.Join(cp.Dir, "kubeconfig")
	if err := os.WriteFile(cp.Kubeconfig, cp.Env.KubeConfig, 0o600); err != nil {
		return nil, fmt.Errorf("control plane: write kubeconfig: %w", err)
	}
	return cp, nil
}

// Host returns the apiserver's "host:port". It stays the same across
// [ControlPlane.StopAPIServer] and [ControlPlane.StartAPIServer].
func (cp *ControlPlane) Host() string {
	return cp.Env.ControlPlane.APIServer.SecureServing.HostPort()
}

// UserKubeconfig provisions a client-certificate user with the given groups
// (no RBAC bindings are created) and writes a kubeconfig for it into Dir.
// Use it to test that RBAC manifests grant enough.
func (cp *ControlPlane) UserKubeconfig(name string, groups ...string) (string, *rest.Config, error) {
	u, err := cp.Env.AddUser(envtest.User{Name: name, Groups: groups}, &rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		return "", nil, fmt.Errorf("add user %s: %w", name, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return "", nil, fmt.Errorf("kubeconfig for %s: %w", name, err)
	}
	path := filepath.Join(cp.Dir, "kubeconfig-"+sanitize(name))
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return "", nil, fmt.Errorf("write kubeconfig for %s: %w", name, err)
	}
	return path, u.Config(), nil
}

// APIServerStopGrace is how long [ControlPlane.StopAPIServer] lets
// kube-apiserver shut down gracefully before it kills it. With watches open,
// kube-apiserver would wait for them up to its request timeout (60 s), and
// envtest's own Stop only kills after its stop timeout (20 s).
const APIServerStopGrace = time.Second

// StopAPIServer stops kube-apiserver and leaves etcd, and so every object,
// running: SIGTERM, then SIGKILL after [APIServerStopGrace]. Clients'
// connections, open watches included, are cut, and the port refuses
// connections until [ControlPlane.StartAPIServer].
func (cp *ControlPlane) StopAPIServer() error {
	s := cp.Env.ControlPlane.APIServer
	// envtest keeps the process to itself; find it by its unique --cert-dir.
	path := s.Path
	if cp.apiserverBin != "" {
		path = cp.apiserverBin // the wrapper has exec'd it
	}
	pid, err := findProcess(path, "--cert-dir="+s.CertDir)
	if err != nil {
		return fmt.Errorf("stop kube-apiserver: %w", err)
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), APIServerStopGrace)
	err = Poll(ctx, processGone(pid))
	cancel()
	if err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// envtest's goroutine reaps it; then its Stop is a no-op but for the
	// bookkeeping that lets Start run again.
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Poll(ctx, processReaped(pid)); err != nil {
		return fmt.Errorf("stop kube-apiserver (pid %d): %w", pid, err)
	}
	if err := stopReaped(ctx, s.Stop); err != nil {
		return fmt.Errorf("stop kube-apiserver: %w", err)
	}
	closed := TCPClosedProbe(cp.Host())
	if cp.ns != nil {
		// The forwarder on the host keeps accepting; the port that
		// refuses is the apiserver's own, in its namespace.
		closed = func(ctx context.Context) error {
			c, err := cp.ns.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", s.SecureServing.Port))
			if err != nil {
				return nil
			}
			c.Close()
			return fmt.Errorf("kube-apiserver still accepts connections in %s", cp.ns.Name)
		}
	}
	if err := Poll(ctx, closed); err != nil {
		return fmt.Errorf("stop kube-apiserver: %w", err)
	}
	return nil
}

// findProcess returns the pid of the process running path with arg among its
// arguments.
func findProcess(path, arg string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("find %s: %w", filepath.Base(path), err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if args[0] == path && slices.Contains(args[1:], arg) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no running %s with %s", path, arg)
}

// stopReaped runs envtest's Stop for a process that has already been
// reaped. envtest's goroutine notes the exit only after its Wait has
// reaped the process, so a Stop in between still signals the process group
// and gets ESRCH (seen under load, on Cilium's node); it is retried until
// envtest has caught up. Any other error is returned at once.
func stopReaped(ctx context.Context, stop func() error) error {
	for {
		err := stop()
		if err == nil || !errors.Is(err, syscall.ESRCH) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%w)", err, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// processGone is ready once pid has exited (it may still be a zombie).
func processGone(pid int) Probe {
	return func(context.Context) error {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(b), ") Z ") {
			return nil
		}
		return fmt.Errorf("pid %d is still running", pid)
	}
}

// processReaped is ready once pid has exited and been reaped.
func processReaped(pid int) Probe {
	return func(context.Context) error {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return nil
		}
		return fmt.Errorf("pid %d has not been reaped", pid)
	}
}

// StartAPIServer starts kube-apiserver again after [ControlPlane.StopAPIServer],
// on the same address, with the same certificates and the same etcd, and
// returns once it is healthy. Existing clients, informers and kubeconfig
// files keep working: client-go reconnects and informers re-list and re-watch.
func (cp *ControlPlane) StartAPIServer() error {
	if err := cp.Env.ControlPlane.APIServer.Start(); err != nil {
		return fmt.Errorf("start kube-apiserver on %s: %w", cp.Host(), err)
	}
	return nil
}

// Stop stops kube-apiserver and etcd, discarding etcd's data, and removes
// Dir if the harness created it. It is idempotent.
func (cp *ControlPlane) Stop() error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.stopped {
		return nil
	}
	cp.stopped = true
	var errs []error
	if err := cp.Env.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("stop control plane: %w", err))
	}
	cp.closeForwarders()
	cp.closeLogs()
	if cp.ownDir {
		if err := os.RemoveAll(cp.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (cp *ControlPlane) openLog(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(cp.Dir, name))
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	cp.logs = append(cp.logs, f)
	return f, nil
}

func (cp *ControlPlane) closeLogs() {
	for _, f := range cp.logs {
		f.Close()
	}
	cp.logs = nil
}

// dumpLogs prints the tail of the control plane's logs in dir.
func dumpLogs(t testing.TB, dir string) {
	t.Helper()
	for _, name := range []string{"etcd.log", "kube-apiserver.log"} {
		p := &Process{Name: name, LogPath: filepath.Join(dir, name)}
		if _, err := os.Stat(p.LogPath); err == nil {
			t.Logf("harness: tail of %s:\n%s", name, p.tail(16<<10))
		}
	}
}
