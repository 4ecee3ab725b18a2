package node

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
)

// serveKubeletAPI serves the kubelet endpoints the apiserver proxies to
// (containerLogs, exec, attach, portForward, pods) on NodeIP:KubeletPort
// inside the node's namespace, over TLS with a self-signed certificate,
// through virtual-kubelet's handlers. Like a kubelet with anonymous auth,
// it does not check who calls. virtual-kubelet hands port-forward the two
// stream timeouts swapped: its connection's idle timeout is
// StreamCreationTimeout (30 s), not StreamIdleTimeout.
func (n *Node) serveKubeletAPI() error {
	cert, err := selfSigned(n.cfg.NodeName, n.cfg.NodeIP.AsSlice())
	if err != nil {
		return fmt.Errorf("node: kubelet API: %w", err)
	}
	addr := net.JoinHostPort(n.cfg.NodeIP.String(), strconv.Itoa(n.cfg.KubeletPort))
	l, err := n.cfg.NodeNS.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("node: kubelet API: %w", err)
	}
	mux := http.NewServeMux()
	pods := func(ctx context.Context) ([]*corev1.Pod, error) { return (&provider{n}).GetPods(ctx) }
	api.AttachPodRoutes(api.PodHandlerConfig{
		RunInContainer:        n.execHandler,
		AttachToContainer:     n.attachHandler,
		PortForward:           n.portForwardHandler,
		GetContainerLogs:      n.logsHandler,
		GetPods:               pods,
		GetPodsFromKubernetes: pods,
		StreamIdleTimeout:     5 * time.Minute,
		StreamCreationTimeout: 30 * time.Second,
	}, mux, true)
	n.kubelet = &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = n.kubelet.ServeTLS(l, "", "") }()
	return nil
}

func (n *Node) execHandler(ctx context.Context, namespace, pod, container string, cmd []string, io api.AttachIO) error {
	c, err := n.container(namespace, pod, container)
	if err != nil {
		return err
	}
	code, err := n.execStreams(ctx, c, cmd, io.Stdin(), io.Stdout(), io.Stderr())
	if err == nil && code != 0 {
		err = fmt.Errorf("command terminated with exit code %d", code)
	}
	return err
}

func (n *Node) logsHandler(ctx context.Context, namespace, pod, container string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	c, err := n.container(namespace, pod, container)
	if err != nil {
		return nil, err
	}
	path, prev := c.logPaths()
	if opts.Previous {
		path = prev
	}
	if path == "" {
		return nil, fmt.Errorf("container %q in pod %q has no such logs", container, pod)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	size := int64(len(b))
	b = tailLines(b, opts.Tail)
	if opts.LimitBytes > 0 && len(b) > opts.LimitBytes {
		b = b[:opts.LimitBytes]
	}
	c.mu.Lock()
	proc := c.recent
	c.mu.Unlock()
	current := proc != nil && proc.out.path == path
	if !opts.Follow || opts.Previous || !current {
		if current && opts.Tail <= 0 && opts.LimitBytes <= 0 {
			proc.out.noteShown(size)
		}
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	// The log only grows: the follower goes on from what was read.
	r, err := proc.out.reader(size)
	if err != nil {
		return nil, err
	}
	return &follower{ctx: ctx, r: r, buf: b}, nil
}

// tailLines keeps the last n lines of b (all for n <= 0).
func tailLines(b []byte, n int) []byte {
	if n <= 0 {
		return b
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			if n--; n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}

// selfSigned makes a serving certificate for the kubelet API.
func selfSigned(name string, ip net.IP) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		IPAddresses:  []net.IP{ip},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
