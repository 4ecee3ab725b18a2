package harness

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// inNamespace makes etcd and kube-apiserver start inside ns: wrappers around
// the binaries of assets that enter ns first (the folder of wrappers is
// returned as envtest's assets), fixed ports, kube-apiserver bound to every
// address of ns, and forwarders from the same loopback ports of the test's
// namespace, through which envtest checks health and clients connect.
func (cp *ControlPlane) inNamespace(ns *netns.NS, assets string, apiserver *envtest.APIServer, etcd *envtest.Etcd) (string, error) {
	wrappers := filepath.Join(cp.Dir, "bin")
	if err := os.MkdirAll(wrappers, 0o755); err != nil {
		return "", fmt.Errorf("control plane: %w", err)
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		real := filepath.Join(assets, name)
		if _, err := os.Stat(real); err != nil {
			return "", fmt.Errorf("control plane: %w", err)
		}
		// `ip netns exec` execs the binary in place, so envtest's signals
		// reach it directly.
		// envtest starts the wrapper, so it joins the namespace's cgroup
		// itself.
		join := ""
		if ns.Cgroup != nil {
			join = fmt.Sprintf("echo $$ > %s\n", ns.Cgroup.ProcsFile())
		}
		script := fmt.Sprintf("#!/bin/sh\n%sexec ip netns exec %s %s \"$@\"\n", join, ns.Name, real)
		if err := os.WriteFile(filepath.Join(wrappers, name), []byte(script), 0o755); err != nil {
			return "", fmt.Errorf("control plane: %w", err)
		}
	}
	apiPort, err := freePort("127.0.0.1")
	if err != nil {
		return "", fmt.Errorf("control plane: %w", err)
	}
	etcdPort, err := freePort("127.0.0.1")
	if err != nil {
		return "", fmt.Errorf("control plane: %w", err)
	}
	// Explicit paths: envtest prefers $KUBEBUILDER_ASSETS to its assets
	// folder.
	apiserver.Path = filepath.Join(wrappers, "kube-apiserver")
	cp.ns, cp.apiserverBin = ns, filepath.Join(assets, "kube-apiserver")
	etcd.Path = filepath.Join(wrappers, "etcd")
	apiserver.SecureServing.Address = "127.0.0.1"
	apiserver.SecureServing.Port = strconv.Itoa(apiPort)
	apiserver.Configure().Set("bind-address", "0.0.0.0")
	etcd.URL = &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(etcdPort))}
	for _, port := range []int{apiPort, etcdPort} {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return "", fmt.Errorf("control plane: forwarder: %w", err)
		}
		cp.forwarders = append(cp.forwarders, netns.Forward(l, func(ctx context.Context) (net.Conn, error) {
			return ns.DialContext(ctx, "tcp", addr)
		}))
	}
	return wrappers, nil
}

// servingCert gives kube-apiserver a serving certificate valid for
// localhost, the loopback address, the advertised address and
// opts.ServingIPs (envtest's own covers only the first two), signed by a CA
// written to [ControlPlane.CAFile].
func (cp *ControlPlane) servingCert(apiserver *envtest.APIServer, certDir string, opts ControlPlaneOptions) error {
	names := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "127.0.0.1"}
	if opts.AdvertiseAddress.IsValid() {
		names = append(names, opts.AdvertiseAddress.String())
	}
	for _, ip := range opts.ServingIPs {
		names = append(names, ip.String())
	}
	dir := filepath.Join(cp.Dir, "serving")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	cert, err := NewSelfSignedCert(dir, names...)
	if err != nil {
		return fmt.Errorf("control plane: serving certificate: %w", err)
	}
	certPEM, err := os.ReadFile(cert.CertFile)
	if err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	keyPEM, err := os.ReadFile(cert.KeyFile)
	if err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	// envtest keeps an apiserver.crt it finds in CertDir, and trusts the CA
	// it is told about.
	if err := os.WriteFile(filepath.Join(certDir, "apiserver.crt"), certPEM, 0o640); err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	if err := os.WriteFile(filepath.Join(certDir, "apiserver.key"), keyPEM, 0o600); err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	apiserver.SecureServing.CA = certPEM
	cp.CAFile = cert.CertFile
	// envtest then skips its service-account signing pair as well.
	saDir := filepath.Join(cp.Dir, "sa")
	if err := os.MkdirAll(saDir, 0o700); err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	sa, err := NewSelfSignedCert(saDir, "service-accounts")
	if err != nil {
		return fmt.Errorf("control plane: service-account key: %w", err)
	}
	for src, dst := range map[string]string{sa.CertFile: "sa-signer.crt", sa.KeyFile: "sa-signer.key"} {
		b, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("control plane: %w", err)
		}
		if err := os.WriteFile(filepath.Join(certDir, dst), b, 0o600); err != nil {
			return fmt.Errorf("control plane: %w", err)
		}
	}
	return nil
}

func (cp *ControlPlane) closeForwarders() {
	for _, f := range cp.forwarders {
		_ = f.Close()
	}
	cp.forwarders = nil
}
