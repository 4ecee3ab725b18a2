package hairpin

import (
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	_ "github.com/coredns/coredns/core" // the dns server type
	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/bind"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// useFakeClients makes setup hand out fake clientsets over objs.
func useFakeClients(t *testing.T, objs ...k8sruntime.Object) {
	t.Helper()
	orig := newClientFactory
	newClientFactory = func(settings) (func() (*clients, error), error) {
		return func() (*clients, error) { return &clients{kube: fake.NewClientset(objs...)}, nil }, nil
	}
	t.Cleanup(func() { newClientFactory = orig })
	registerDirective(t)
}

// registerDirective puts hairpin into the directive list, as plugin.cfg does
// in the real build.
func registerDirective(t *testing.T) {
	t.Helper()
	dirs := slices.Clone(dnsserver.Directives)
	if !slices.Contains(dirs, pluginName) {
		i := slices.Index(dirs, "hosts")
		if err := dnsserver.SetDirectives(slices.Insert(dirs, i, pluginName)); err != nil {
			t.Fatal(err)
		}
	}
}

// freeLoopbackPort is a port free for both TCP and UDP on 127.0.0.1: a DNS
// server binds both.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	return harness.FreePort(t, "127.0.0.1")
}

// twoBlocks is a Corefile with two server blocks whose hairpin settings are
// the same, apart from ttl, which does not shape the cache.
func twoBlocks(p1, p2 int, extra string) caddy.Input {
	return caddy.CaddyfileInput{ServerTypeName: "dns", Contents: []byte(fmt.Sprintf(`
example.com:%d {
    bind 127.0.0.1
    hairpin {
        startup_timeout 5s
        %s
    }
}
example.com:%d {
    bind 127.0.0.1
    hairpin {
        ttl 30
        %s
    }
}`, p1, extra, p2, extra))}
}

func sharedCaches() map[*hostCache]int {
	shared.Lock()
	defer shared.Unlock()
	out := map[*hostCache]int{}
	for _, sc := range shared.caches {
		out[sc.cache] = sc.refs
	}
	return out
}

func onlyCache(t *testing.T) *hostCache {
	t.Helper()
	caches := sharedCaches()
	if len(caches) != 1 {
		t.Fatalf("%d shared caches, want 1", len(caches))
	}
	for hc, refs := range caches {
		if refs != 2 {
			t.Fatalf("cache held by %d server blocks, want 2", refs)
		}
		return hc
	}
	return nil
}

func TestTwoServerBlocksShareOneCacheAndReloadKeepsIt(t *testing.T) {
	useFakeClients(t, proxyService("127.77.0.10"), ingress("default", "app", "", "app.example.com"))
	baseline := runtime.NumGoroutine()
	p1, p2 := freeLoopbackPort(t), freeLoopbackPort(t)

	inst, err := caddy.Start(twoBlocks(p1, p2, ""))
	if err != nil {
		t.Fatal(err)
	}
	first := onlyCache(t)
	if !first.serving() {
		t.Fatal("cache not synced after OnStartup")
	}

	// Reloads with the same settings keep the same cache: no re-list.
	for i := 0; i < 5; i++ {
		if inst, err = inst.Restart(twoBlocks(p1, p2, "")); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
		if got := onlyCache(t); got != first {
			t.Fatalf("reload %d replaced the cache", i)
		}
	}

	// A reload that changes the settings replaces the cache and stops the old one.
	if inst, err = inst.Restart(twoBlocks(p1, p2, "labels team=a")); err != nil {
		t.Fatal(err)
	}
	if got := onlyCache(t); got == first {
		t.Fatal("changed settings kept the old cache")
	}
	select {
	case <-first.stopCh:
	default:
		t.Fatal("the old cache was not stopped")
	}

	inst.Stop()
	for _, err := range inst.ShutdownCallbacks() {
		t.Error(err)
	}
	if n := len(sharedCaches()); n != 0 {
		t.Fatalf("%d caches left after shutdown", n)
	}
	waitForGoroutines(t, baseline)
}

// watchGoroutines returns the stacks of goroutines that belong to our
// caches: informers, reflectors and watches of client-go, and hostCache's own
// loops. The DNS servers' goroutines are caddy's and are not counted.
func watchGoroutines() []string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var ours []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "k8s.io/client-go/") || strings.Contains(g, "plugin/hairpin.(*hostCache)") {
			ours = append(ours, g)
		}
	}
	return ours
}

// waitForGoroutines fails unless every watch goroutine is gone within 5 s.
func waitForGoroutines(t *testing.T, _ int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := watchGoroutines()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d watch goroutines leaked after shutdown:\n%s", len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRepeatedReloadsDoNotLeakGoroutines(t *testing.T) {
	useFakeClients(t, proxyService("127.77.0.10"))
	baseline := runtime.NumGoroutine()
	p1, p2 := freeLoopbackPort(t), freeLoopbackPort(t)
	inst, err := caddy.Start(twoBlocks(p1, p2, "labels round=0"))
	if err != nil {
		t.Fatal(err)
	}
	oneCache := len(watchGoroutines())
	// Every reload changes the settings, so every reload starts new watches
	// and must stop the old ones.
	for i := 1; i <= 10; i++ {
		if inst, err = inst.Restart(twoBlocks(p1, p2, fmt.Sprintf("labels round=%d", i))); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
	}
	afterReloads := len(watchGoroutines())
	if afterReloads > oneCache+2 {
		t.Errorf("%d watch goroutines after 10 reloads, %d with one cache: old watches were not stopped", afterReloads, oneCache)
	}
	inst.Stop()
	inst.ShutdownCallbacks()
	waitForGoroutines(t, baseline)
	t.Logf("watch goroutines: %d with the first cache, %d after 10 reloads, 0 after shutdown", oneCache, afterReloads)
}

func TestFailedReloadReleasesItsCache(t *testing.T) {
	useFakeClients(t, ingress("default", "app", "", "app.example.com"))
	port := freeLoopbackPort(t)
	busy, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.LocalAddr().(*net.UDPAddr).Port
	block := func(zone string, port int) string {
		return fmt.Sprintf("%s:%d {\n bind 127.0.0.1\n hairpin {\n  proxy_ip 127.77.0.10\n }\n}\n", zone, port)
	}
	inst := startCorefile(t, block("example.com", port))
	if n := len(sharedCaches()); n != 1 {
		t.Fatalf("%d caches after start, want 1", n)
	}
	// The new instance's settings differ (another zone), so it builds a
	// cache of its own; its second server cannot bind, so caddy discards it.
	next := caddy.CaddyfileInput{ServerTypeName: "dns", Contents: []byte(block("example.org", port) + block("example.net", busyPort))}
	if _, err := inst.Restart(next); err == nil {
		t.Fatal("reload onto a busy port succeeded")
	}
	if n := len(sharedCaches()); n != 1 {
		t.Fatalf("%d caches after the failed reload, want 1: the discarded instance's cache leaked", n)
	}
}
