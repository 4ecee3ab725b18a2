package hairpin

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	_ "github.com/coredns/coredns/plugin/template"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// forbid makes every list and watch of resource fail with 403, as the
// apiserver does when the RBAC for it was not applied.
func forbid(c *k8stesting.Fake, group, resource string) {
	deny := func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: resource}, "", fmt.Errorf("RBAC: not granted"))
	}
	c.PrependReactor("list", resource, deny)
	c.PrependWatchReactor(resource, func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: resource}, "", fmt.Errorf("RBAC: not granted"))
	})
}

func TestForbiddenKindDegradesOnlyItsOwnHosts(t *testing.T) {
	cases := []struct {
		name   string
		kind   string
		s      settings
		denyGW bool
		denyIC bool
	}{
		{"gateway API RBAC not applied", "gateway",
			settings{gatewayClasses: []string{"*"}}, true, false},
		{"namespaced RBAC: IngressClasses forbidden", "ingressclass",
			settings{ingressClasses: []string{"nginx"}}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset(ingress("default", "app", "nginx", "app.example.com"))
			gwc := gwfake.NewSimpleClientset()
			if tc.denyIC {
				forbid(&kube.Fake, "networking.k8s.io", "ingressclasses")
			}
			if tc.denyGW {
				forbid(&gwc.Fake, "gateway.networking.k8s.io", "gateways")
			}
			disc := &fakeDiscovery{served: map[string][]string{}}
			disc.install("v1", "gateways", "httproutes")
			s := tc.s
			s.zones, s.labels, s.proxyIPs, s.startupTimeout = []string{"example.com."}, labels.Everything(), ips("127.77.0.10"), 300*time.Millisecond
			hc := newHostCache(&clients{kube: kube, gateway: gwc, discovery: disc}, s)
			if err := hc.start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(hc.stop)
			h := newTestHairpin(hc, s.zones)
			if !hc.waitOpen(5 * time.Second) {
				t.Fatal("not serving after startup_timeout: one kind holds the plugin, and the cluster's DNS, hostage")
			}
			if !h.Ready() {
				t.Fatal("not Ready after startup_timeout")
			}
			wantServed(t, hc, "app.example.com.")
			eventually(t, "watch errors counted by kind and reason", func() bool {
				return testutil.ToFloat64(watchErrors.WithLabelValues(hc.id, tc.kind, "forbidden")) > 0
			})
			if got := testutil.ToFloat64(kindSynced.WithLabelValues(hc.id, tc.kind)); got != 0 {
				t.Errorf("kind_synced{%s} = %v, want 0", tc.kind, got)
			}
			if got := testutil.ToFloat64(kindSynced.WithLabelValues(hc.id, "ingress")); got != 1 {
				t.Errorf("kind_synced{ingress} = %v, want 1", got)
			}
		})
	}
}

func TestGatewayRecreatedDuringWatchGapIsApplied(t *testing.T) {
	hc := newHostCache(nil, settings{zones: []string{"example.com."}, proxyIPs: ips("127.77.0.10"), gatewayClasses: []string{"*"}, labels: labels.Everything()})
	hc.gateway.applied = map[ownerRef]specVersion{}
	hc.gateway.routeGWs = map[ownerRef][]ownerRef{}
	// The same Gateway as a relist sees it: generation 1, by UID.
	relisted := func(uid, host string) {
		t.Helper()
		g := &cachedGateway{objectMeta: objectMeta{namespace: "infra", name: "public", uid: types.UID(uid), generation: 1},
			gateway: rules.Gateway{Namespace: "infra", Name: "public", Listeners: []gw.Listener{listener("https", host, "")}}}
		hc.mu.Lock()
		hc.onGatewayLocked(g, time.Now())
		hc.mu.Unlock()
		hc.publish()
		wantServed(t, hc, host+".")
	}
	relisted("uid-1", "old.example.com")
	// Deleted and recreated while the watch was down: the relist shows a
	// new object with generation 1 again and no delete event.
	relisted("uid-2", "new.example.com")
}

func TestPublishAndStoreAreOneStep(t *testing.T) {
	hc := newHostCache(nil, settings{zones: []string{"example.com."}, proxyIPs: ips("127.77.0.10")})
	tgt := hc.targets["proxy_ip"]
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				hc.mu.Lock()
				ref := ownerRef{kind: rules.KindIngress, key: fmt.Sprintf("w%d/i%d", w, i)}
				hc.setNamedClaimsLocked(ref, hc.claimsFor([]string{fmt.Sprintf("h%d-%d.example.com", w, i)}, selection{Target: tgt}), time.Now())
				hc.mu.Unlock()
				hc.publish()
			}
		}(w)
	}
	wg.Wait()
	// Nothing is dirty any more, so no later publish would store again:
	// the stored index must be the last one built.
	hc.mu.Lock()
	live := hc.claims.live
	hc.mu.Unlock()
	if hc.index() != live {
		t.Fatal("the stored index is not the last one published")
	}
	if exact, _ := hc.index().size(); exact != 2000 {
		t.Fatalf("%d hosts served, want 2000", exact)
	}
}

// captureSink records klog lines, as the kubernetes plugin's sink (set after
// ours, whatever the directive order) would print them.
type captureSink struct {
	mu    sync.Mutex
	lines []string
}

func (s *captureSink) Init(logr.RuntimeInfo)          {}
func (s *captureSink) Enabled(int) bool               { return true }
func (s *captureSink) WithValues(...any) logr.LogSink { return s }
func (s *captureSink) WithName(string) logr.LogSink   { return s }
func (s *captureSink) Info(_ int, msg string, _ ...any) {
	s.mu.Lock()
	s.lines = append(s.lines, msg)
	s.mu.Unlock()
}
func (s *captureSink) Error(err error, msg string, _ ...any) {
	s.mu.Lock()
	s.lines = append(s.lines, fmt.Sprintf("%s: %v", msg, err))
	s.mu.Unlock()
}

func TestWatchFailuresAreOursNotKlogs(t *testing.T) {
	sink := &captureSink{}
	klog.SetLogger(logr.New(sink))
	t.Cleanup(klog.ClearLogger)

	kube := fake.NewClientset()
	forbid(&kube.Fake, "networking.k8s.io", "ingressclasses")
	s := settings{zones: []string{"example.com."}, labels: labels.Everything(), proxyIPs: ips("127.77.0.10"),
		ingressClasses: []string{"nginx"}, startupTimeout: 100 * time.Millisecond}
	hc := newHostCache(&clients{kube: kube}, s)
	if err := hc.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.stop)
	eventually(t, "two forbidden lists counted", func() bool {
		return testutil.ToFloat64(watchErrors.WithLabelValues(hc.id, "ingressclass", "forbidden")) >= 2
	})
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for _, l := range sink.lines {
		if strings.Contains(l, "ingressclasses") || strings.Contains(l, "IngressClass") {
			t.Errorf("a watch failure went through klog, where another plugin's sink prints every retry: %q", l)
		}
	}
}

func TestUnreachableAPIServerDoesNotHoldStartupOrDNS(t *testing.T) {
	// An apiserver that accepts TCP and never answers.
	stall, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stall.Close()
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := stall.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	kubeconfig := writeKubeconfig(t, "http://"+stall.Addr().String())
	registerDirective(t)

	port := freeLoopbackPort(t)
	started := make(chan *dns.Msg, 1)
	go func() {
		inst := startCorefile(t, fmt.Sprintf(`example.com:%d {
    bind 127.0.0.1
    hairpin {
        proxy_ip 127.77.0.10
        gateway_class *
        kubeconfig %s
        startup_timeout 500ms
    }
    template IN A other.example.com {
        answer "{{ .Name }} 60 IN A 192.0.2.1"
    }
}`, port, kubeconfig))
		_ = inst
		started <- exchange(t, fmt.Sprintf("127.0.0.1:%d", port), "other.example.com.", dns.TypeA)
	}()
	select {
	case r := <-started:
		if len(r.Answer) != 1 {
			t.Fatalf("other names are not answered while the apiserver stalls: %v", r)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("CoreDNS did not start serving within startup_timeout (plus slack) while the apiserver stalls")
	}
}

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := t.TempDir() + "/kubeconfig"
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
