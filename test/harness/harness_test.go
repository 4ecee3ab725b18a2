package harness_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd")
	}
	cp := harness.NewControlPlane(t, harness.ControlPlaneOptions{GatewayAPI: harness.GatewayStandard})
	ctx := ctxTimeout(t, 2*time.Minute)
	cs := cp.Clientset

	t.Run("ServiceGetsLoopbackClusterIP", func(t *testing.T) {
		svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "hairpin-proxy"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
		if err != nil || !harness.ServiceCIDR.Contains(ip) {
			t.Fatalf("ClusterIP %q (%v) is not in %s", svc.Spec.ClusterIP, err, harness.ServiceCIDR)
		}
		// The point of the loopback range: a test can listen on it.
		l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
		if err != nil {
			t.Fatalf("listen on ClusterIP %s: %v", ip, err)
		}
		l.Close()
		t.Logf("Service ClusterIP %s", ip)
	})

	t.Run("KubectlVersion", func(t *testing.T) {
		kubectl := harness.RequireKubectl(t)
		// stdout only: kubectl warns about version skew on stderr.
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", cp.Kubeconfig, "version", "-o", "json").Output()
		if err != nil {
			t.Fatalf("kubectl version: %v\n%s", err, out)
		}
		var v struct {
			ServerVersion struct{ GitVersion, Major, Minor string }
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("kubectl version output: %v\n%s", err, out)
		}
		if v.ServerVersion.GitVersion != "v1.37.2" || v.ServerVersion.Major != "1" || v.ServerVersion.Minor != "37" {
			t.Fatalf("server version %+v, want v1.37.2 (1.37)\n%s", v.ServerVersion, out)
		}
	})

	t.Run("GatewayAPICRDs", func(t *testing.T) {
		rl, err := cs.Discovery().ServerResourcesForGroupVersion("gateway.networking.k8s.io/v1")
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, r := range rl.APIResources {
			have[r.Name] = true
		}
		for _, want := range []string{"gatewayclasses", "gateways", "httproutes"} {
			if !have[want] {
				t.Errorf("gateway.networking.k8s.io/v1 lacks %s; have %v", want, have)
			}
		}
	})

	t.Run("APIServerRestart", func(t *testing.T) {
		host := cp.Host()
		mk := func(name string) error {
			_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		}
		if err := mk("before"); err != nil {
			t.Fatal(err)
		}

		// An informer that lives through the outage, as the plugin's does.
		var seen sync.Map
		infCtx, stopInformer := context.WithCancel(ctx)
		factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
		inf := factory.Core().V1().ConfigMaps().Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			seen.Store(obj.(*corev1.ConfigMap).Name, true)
		}}); err != nil {
			t.Fatal(err)
		}
		factory.Start(infCtx.Done())
		// Stop the informer before the control plane stops (see the package
		// doc), and cancel before Shutdown, which waits for the informers.
		defer func() { stopInformer(); factory.Shutdown() }()
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("informer did not sync")
		}

		start := time.Now()
		if err := cp.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		t.Logf("apiserver stopped in %s", time.Since(start).Round(time.Millisecond))
		shortCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := cs.CoreV1().ConfigMaps("default").Get(shortCtx, "before", metav1.GetOptions{})
		cancel()
		if err == nil {
			t.Fatal("Get succeeded while the apiserver is stopped")
		}
		t.Logf("while stopped: %v", err)
		if _, ok := seen.Load("before"); !ok {
			t.Error("informer lost its cache")
		}

		start = time.Now()
		if err := cp.StartAPIServer(); err != nil {
			t.Fatal(err)
		}
		t.Logf("apiserver restarted in %s", time.Since(start).Round(time.Millisecond))
		if cp.Host() != host {
			t.Fatalf("apiserver moved from %s to %s", host, cp.Host())
		}
		if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "before", metav1.GetOptions{}); err != nil {
			t.Fatalf("object created before the restart: %v", err)
		}
		if err := mk("after"); err != nil {
			t.Fatal(err)
		}
		// The informer reconnects by itself and sees the new object.
		start = time.Now()
		if err := harness.Poll(ctxTimeout(t, time.Minute), func(context.Context) error {
			if _, ok := seen.Load("after"); !ok {
				return fmt.Errorf("informer has not seen the ConfigMap created after the restart")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		t.Logf("informer caught up %s after the restart", time.Since(start).Round(time.Millisecond))
		// kubectl keeps working with the same kubeconfig file.
		if out, err := exec.CommandContext(ctx, harness.RequireKubectl(t), "--kubeconfig", cp.Kubeconfig, "get", "configmap", "after", "-o", "name").CombinedOutput(); err != nil {
			t.Fatalf("kubectl after restart: %v\n%s", err, out)
		}
	})
}

// proxyV1 is a PROXY protocol v1 header, written by hand.
func proxyV1(src, dst netip.AddrPort) string {
	return fmt.Sprintf("PROXY TCP4 %s %s %d %d\r\n", src.Addr(), dst.Addr(), src.Port(), dst.Port())
}

func TestNginx(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nginx")
	}
	n := harness.StartNginx(t, harness.NginxOptions{PlainListeners: true})
	ctx := ctxTimeout(t, time.Minute)
	client := netip.MustParseAddrPort("203.0.113.7:41234")
	get := "GET / HTTP/1.1\r\nHost: app.example.com\r\nConnection: close\r\n\r\n"

	dial := func(t *testing.T, addr string) net.Conn {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	readResponse := func(t *testing.T, c io.Reader) string {
		t.Helper()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no HTTP response: %v", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %s: %s", resp.Status, body)
		}
		return string(body)
	}

	t.Run("HTTPWithoutHeaderRefused", func(t *testing.T) {
		c := dial(t, n.HTTPAddr)
		io.WriteString(c, get)
		b, err := io.ReadAll(c)
		if len(b) != 0 {
			t.Fatalf("nginx answered a connection without PROXY header: %q", b)
		}
		t.Logf("read: %v", err)
		if err := n.WaitErrorLog(ctx, "broken header"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("HTTPWithHeader", func(t *testing.T) {
		c := dial(t, n.HTTPAddr)
		io.WriteString(c, proxyV1(client, netip.MustParseAddrPort("127.77.0.10:80"))+get)
		body := readResponse(t, c)
		if !strings.Contains(body, "client=203.0.113.7") {
			t.Errorf("body %q: real client address not taken from the header", body)
		}
		e, err := n.WaitAccessLog(ctx, func(e harness.AccessLogEntry) bool {
			return e.ProxyProtocolAddr == "203.0.113.7" && e.Scheme == "http"
		})
		if err != nil {
			t.Fatal(err)
		}
		if e.RemoteAddr != "203.0.113.7" || e.ProxyProtocolServerPort != "80" || e.Host != "app.example.com" || e.Status != "200" {
			t.Errorf("access log entry %+v", e)
		}
	})

	t.Run("TLSWithHeader", func(t *testing.T) {
		c := dial(t, n.TLSAddr)
		io.WriteString(c, proxyV1(client, netip.MustParseAddrPort("127.77.0.10:443")))
		tc := tls.Client(c, &tls.Config{ServerName: "app.example.com", RootCAs: n.Cert.Pool})
		io.WriteString(tc, get)
		readResponse(t, tc)
		e, err := n.WaitAccessLog(ctx, func(e harness.AccessLogEntry) bool {
			return e.ProxyProtocolAddr == "203.0.113.7" && e.Scheme == "https"
		})
		if err != nil {
			t.Fatal(err)
		}
		if e.SSLServerName != "app.example.com" || e.ProxyProtocolServerPort != "443" {
			t.Errorf("access log entry %+v", e)
		}
	})

	t.Run("TLSWithoutHeaderRefused", func(t *testing.T) {
		c := dial(t, n.TLSAddr)
		tc := tls.Client(c, &tls.Config{ServerName: "app.example.com", RootCAs: n.Cert.Pool})
		if err := tc.Handshake(); err == nil {
			t.Fatal("TLS handshake without PROXY header succeeded")
		}
	})

	t.Run("PlainListenerAndBulk", func(t *testing.T) {
		path, err := n.BulkFile(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + n.PlainHTTPAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		size, _ := io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 || size != 1<<20 {
			t.Fatalf("GET %s: %s, %d bytes", path, resp.Status, size)
		}
	})
}

func TestProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ctx := ctxTimeout(t, 30*time.Second)

	t.Run("StopKillsProcessGroup", func(t *testing.T) {
		// The shell ignores SIGTERM and has a grandchild: only a group kill
		// after the grace period ends both.
		p := harness.StartProcess(t, "sh", "/bin/sh", "-c", `trap "" TERM; sleep 300 & echo child $!; wait`)
		var pid int
		if err := harness.Poll(ctx, func(context.Context) error {
			_, err := fmt.Sscanf(p.Output(), "child %d", &pid)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if err := p.StopTimeout(200 * time.Millisecond); err == nil {
			t.Error("want a signal exit error")
		}
		if err := harness.Poll(ctx, func(context.Context) error {
			// Gone, or a zombie waiting for init to reap it.
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err == nil && !strings.Contains(string(stat), ") Z ") {
				return fmt.Errorf("grandchild %d still alive: %s", pid, stat)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ReadyFailsFastWhenChildExits", func(t *testing.T) {
		p := harness.StartProcess(t, "false", "/bin/sh", "-c", "echo boom; exit 3")
		start := time.Now()
		err := p.Ready(ctx, harness.TCPProbe(harness.FreeAddr(t, "127.0.0.1")))
		if err == nil || !strings.Contains(err.Error(), "boom") || time.Since(start) > 10*time.Second {
			t.Fatalf("Ready = %v after %s", err, time.Since(start))
		}
	})
}

func TestWaitHelpers(t *testing.T) {
	ctx := ctxTimeout(t, 30*time.Second)
	ip := harness.FreeLoopbackIP(t)
	if !ip.Is4() || !netip.MustParsePrefix("127.0.0.0/8").Contains(ip) || harness.ServiceCIDR.Contains(ip) {
		t.Fatalf("FreeLoopbackIP = %s", ip)
	}
	addr := harness.FreeAddr(t, ip.String())

	// Servers come up late; the waits poll until they do.
	var queries atomic.Int32
	srv := &dns.Server{Addr: addr, Net: "udp", Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		queries.Add(1)
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeNameError)
		w.WriteMsg(m)
	})}
	time.AfterFunc(300*time.Millisecond, func() { srv.ListenAndServe() })
	t.Cleanup(func() { srv.Shutdown() })
	if err := harness.Poll(ctx, harness.DNSProbe(addr, "example.org.", dns.TypeA)); err != nil {
		t.Fatal(err)
	}

	hl, err := net.Listen("tcp", harness.FreeAddr(t, ip.String()))
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ready" {
			http.NotFound(w, r)
		}
	})}
	go hs.Serve(hl)
	t.Cleanup(func() { hs.Close() })
	if err := harness.Poll(ctx, harness.HTTPProbe("http://"+hl.Addr().String()+"/ready")); err != nil {
		t.Fatal(err)
	}
	if err := harness.Poll(ctx, harness.TCPProbe(hl.Addr().String())); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := harness.Poll(short, harness.HTTPProbe("http://"+hl.Addr().String()+"/missing")); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("HTTPProbe on a 404 = %v", err)
	}
}
