package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	core "k8s.io/api/core/v1"
	networking "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

const (
	proxyNS   = "hairpin-system"
	proxyName = "hairpin-proxy"
	dnsNS     = "bench-dns"  // one host per Ingress, for the DNS cases
	memNS     = "bench-mem"  // realistic Ingresses, 2 hosts each
	propNS    = "bench-prop" // objects created and changed by the propagation loop
	workers   = 48           // concurrent API writers
)

// kube is the control plane plus a fast admin client.
type kube struct {
	cp      *harness.ControlPlane
	client  *kubernetes.Clientset
	proxyIP string // ClusterIP of hairpin-system/hairpin-proxy
}

// benchKube runs every phase that needs the control plane, in an order that
// lets one apiserver serve them all: RSS with no Ingresses, DNS throughput
// at the small and the large size (one-host Ingresses, deleted afterwards),
// then the realistic Ingresses for memory, startup and propagation.
func benchKube(t *testing.T, cfg config, bin map[string]string, res *Results) {
	k := newKube(t)
	client := k.client
	ctx := t.Context()
	for _, ns := range []string{proxyNS, dnsNS, memNS, propNS} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: ns}}, meta.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The default target of the manifests: every class, in example.com.
	svc, err := createTarget(ctx, client, targetService(proxyNS, proxyName, "example.com", "*"))
	if err != nil {
		t.Fatal(err)
	}
	k.proxyIP = svc.Spec.ClusterIP
	t.Logf("bench: proxy Service %s/%s has ClusterIP %s", proxyNS, proxyName, k.proxyIP)

	if !t.Run("memory_0", func(t *testing.T) { benchRSS0(t, cfg, bin, k, res) }) {
		return
	}
	if !t.Run("dns", func(t *testing.T) { benchDNS(t, cfg, bin, k, res) }) {
		return
	}
	t.Run("dns_activation", func(t *testing.T) { benchActivation(t, cfg, bin, k, res) }) // activation_test.go
	t.Run("cleanup_dns_objects", func(t *testing.T) {
		start := time.Now()
		if err := k.deleteAll(t.Context(), dnsNS); err != nil {
			t.Fatal(err)
		}
		t.Logf("bench: deleted the DNS Ingresses in %s", time.Since(start).Round(time.Millisecond))
	})
	if !t.Run("create_realistic", func(t *testing.T) {
		start := time.Now()
		if err := k.createN(t.Context(), cfg.objects, func(i int) *networking.Ingress { return realisticIngress(i) }); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		res.MemExtra["create_10k_s"] = round(d.Seconds(), 1)
		t.Logf("bench: created %d realistic Ingresses (2 hosts each) in %s", cfg.objects, d.Round(time.Millisecond))
	}) {
		return
	}
	if !t.Run("memory_10k", func(t *testing.T) { benchRSS10k(t, cfg, bin, k, res) }) {
		return
	}
	t.Run("propagation", func(t *testing.T) { benchPropagation(t, cfg, bin, k, res) })
}

// newKube starts a control plane with an admin client that writes fast:
// protobuf, and client-side rate limits far above what the apiserver takes.
func newKube(t *testing.T) *kube {
	cp := harness.NewControlPlane(t, harness.ControlPlaneOptions{})
	rc := rest.CopyConfig(cp.Config)
	rc.QPS, rc.Burst = 5000, 5000
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return &kube{cp: cp, client: client}
}

// createN creates the Ingresses make(0..n-1) with many concurrent writers;
// objects that already exist are left alone.
func (k *kube) createN(ctx context.Context, n int, make func(i int) *networking.Ingress) error {
	return k.parallel(ctx, n, func(ctx context.Context, i int) error {
		ing := make(i)
		_, err := k.client.NetworkingV1().Ingresses(ing.Namespace).Create(ctx, ing, meta.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// deleteAll deletes every Ingress in ns, concurrently (DeleteCollection runs
// with one apiserver worker and may hit the request timeout at 10k).
func (k *kube) deleteAll(ctx context.Context, ns string) error {
	list, err := k.client.NetworkingV1().Ingresses(ns).List(ctx, meta.ListOptions{})
	if err != nil {
		return err
	}
	return k.parallel(ctx, len(list.Items), func(ctx context.Context, i int) error {
		err := k.client.NetworkingV1().Ingresses(ns).Delete(ctx, list.Items[i].Name, meta.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

func (k *kube) parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				var err error
				for attempt := 0; attempt < 5; attempt++ {
					if err = f(ctx, i); err == nil || !retriable(err) {
						break
					}
					time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
				}
				if err != nil {
					cancel(fmt.Errorf("object %d: %w", i, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

func retriable(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

func pathPrefix() *networking.PathType {
	p := networking.PathTypePrefix
	return &p
}

// dnsHost is the i-th host of the DNS cases.
func dnsHost(i int) string { return fmt.Sprintf("h%05d.example.com", i) }

// dnsIngress is a minimal Ingress with one host, for the DNS cases: one host
// per Ingress, so N hosts = N rewrite rules = N hosts-file lines.
func dnsIngress(i int) *networking.Ingress {
	return &networking.Ingress{
		ObjectMeta: meta.ObjectMeta{Namespace: dnsNS, Name: fmt.Sprintf("h%05d", i)},
		Spec: networking.IngressSpec{Rules: []networking.IngressRule{{
			Host: dnsHost(i),
			IngressRuleValue: networking.IngressRuleValue{HTTP: &networking.HTTPIngressRuleValue{Paths: []networking.HTTPIngressPath{{
				Path: "/", PathType: pathPrefix(),
				Backend: networking.IngressBackend{Service: &networking.IngressServiceBackend{Name: "app", Port: networking.ServiceBackendPort{Number: 80}}},
			}}}},
		}}},
	}
}

// createTarget creates svc with a ready EndpointSlice: the plugin answers
// with a target once its proxy has a ready endpoint, and envtest runs no
// EndpointSlice controller.
func createTarget(ctx context.Context, c kubernetes.Interface, svc *core.Service) (*core.Service, error) {
	created, err := c.CoreV1().Services(svc.Namespace).Create(ctx, svc, meta.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return created, harness.ServeEndpoints(ctx, c, created)
}

// targetService is a hairpin target (docs/architecture.md, "Targets"): a proxy Service
// with the target label, answering zones for the Ingress classes given.
func targetService(ns, name, zones, classes string) *core.Service {
	return &core.Service{
		ObjectMeta: meta.ObjectMeta{
			Namespace: ns, Name: name,
			Labels: map[string]string{"hairpin.coredns-hairpin.io/target": ""},
			Annotations: map[string]string{
				"hairpin.coredns-hairpin.io/zones":           zones,
				"hairpin.coredns-hairpin.io/ingress-classes": classes,
			},
		},
		Spec: core.ServiceSpec{
			Selector: map[string]string{"app.kubernetes.io/name": name},
			Ports: []core.ServicePort{
				{Name: "http", Port: 80},
				{Name: "https", Port: 443},
			},
		},
	}
}

// realisticIngress is the i-th production-shaped Ingress of the memory
// phase: two hosts in example.com, class nginx.
func realisticIngress(i int) *networking.Ingress {
	name := fmt.Sprintf("app-%05d", i)
	return productionIngress(memNS, name, "nginx", fmt.Sprintf("app-%05d.example.com", i), fmt.Sprintf("api-%05d.example.com", i))
}

// productionIngress looks like what Helm charts create in production: two
// hosts, a TLS section for both, cert-manager and ingress-nginx annotations,
// the recommended labels, and two paths per rule with their backends.
func productionIngress(ns, name, class string, hosts ...string) *networking.Ingress {
	rule := func(host string) networking.IngressRule {
		backend := func(svc string, port int32) networking.IngressBackend {
			return networking.IngressBackend{Service: &networking.IngressServiceBackend{Name: svc, Port: networking.ServiceBackendPort{Number: port}}}
		}
		return networking.IngressRule{Host: host, IngressRuleValue: networking.IngressRuleValue{HTTP: &networking.HTTPIngressRuleValue{
			Paths: []networking.HTTPIngressPath{
				{Path: "/", PathType: pathPrefix(), Backend: backend(name+"-web", 80)},
				{Path: "/api/v1", PathType: pathPrefix(), Backend: backend(name+"-api", 8080)},
			},
		}}}
	}
	rules := make([]networking.IngressRule, len(hosts))
	for i, h := range hosts {
		rules[i] = rule(h)
	}
	return &networking.Ingress{
		ObjectMeta: meta.ObjectMeta{
			Namespace: ns, Name: name,
			Labels: map[string]string{
				"app.kubernetes.io/name":       name,
				"app.kubernetes.io/instance":   name + "-prod",
				"app.kubernetes.io/component":  "web",
				"app.kubernetes.io/managed-by": "Helm",
				"helm.sh/chart":                "app-1.4.2",
			},
			Annotations: map[string]string{
				"cert-manager.io/cluster-issuer":                     "letsencrypt-prod",
				"nginx.ingress.kubernetes.io/proxy-body-size":        "64m",
				"nginx.ingress.kubernetes.io/proxy-read-timeout":     "3600",
				"nginx.ingress.kubernetes.io/ssl-redirect":           "true",
				"nginx.ingress.kubernetes.io/backend-protocol":       "HTTP",
				"nginx.ingress.kubernetes.io/whitelist-source-range": "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16",
				"meta.helm.sh/release-name":                          name,
				"meta.helm.sh/release-namespace":                     ns,
			},
		},
		Spec: networking.IngressSpec{
			IngressClassName: &class,
			TLS:              []networking.IngressTLS{{Hosts: hosts, SecretName: name + "-tls"}},
			Rules:            rules,
		},
	}
}
