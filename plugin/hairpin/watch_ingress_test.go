package hairpin

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	networking "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// scriptedLW is an Ingress lister-watcher that answers each list with the
// next list of its script, hands its watches to the test, and makes the
// reflector relist by answering a watch with "resourceVersion expired".
type scriptedLW struct {
	mu      sync.Mutex
	lists   [][]*networking.Ingress
	listed  int
	watches chan *watch.FakeWatcher
	expire  bool // the next watch is refused as expired, so the reflector relists
}

func (s *scriptedLW) ListWithContext(_ context.Context, _ meta.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	items := s.lists[min(s.listed, len(s.lists)-1)]
	s.listed++
	list := &networking.IngressList{ListMeta: meta.ListMeta{ResourceVersion: "10"}}
	for _, ing := range items {
		list.Items = append(list.Items, *ing)
	}
	return list, nil
}

func (s *scriptedLW) WatchWithContext(_ context.Context, _ meta.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expire {
		s.expire = false
		return nil, apierrors.NewResourceExpired("too old resource version")
	}
	w := watch.NewFake()
	s.watches <- w
	return w, nil
}

func (s *scriptedLW) List(o meta.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), o)
}
func (s *scriptedLW) Watch(o meta.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), o)
}

// IsWatchListSemanticsUnSupported makes the reflector list, as it does for
// fake clients.
func (s *scriptedLW) IsWatchListSemanticsUnSupported() bool { return true }

// scriptedIngressCache is a serving cache with one fixed target, whose
// Ingresses come from lw through the Ingress store.
func scriptedIngressCache(t *testing.T, lw cache.ListerWatcher) *hostCache {
	t.Helper()
	hc := newHostCache(nil, settings{zones: []string{"example.com."}, proxyIPs: ips("127.77.0.10"), labels: labels.Everything(), startupTimeout: 5 * time.Second})
	k := hc.addKind("ingress", true)
	hc.watchInto(k, lw, &networking.Ingress{}, newIngressEntry(hc.selected, newInterner(8)), ingressKey, ingressView{s: hc.ingresses})
	hc.runControllers()
	hc.wg.Add(1)
	go k.waitSynced()
	t.Cleanup(hc.stop)
	eventually(t, "the first list", func() bool { return k.synced.Load() })
	hc.open.Store(true)
	return hc
}

// publishedHosts publishes and returns what is served.
func publishedHosts(hc *hostCache) []string {
	hc.publish()
	return served(hc)
}

func wantPublished(t *testing.T, hc *hostCache, want ...string) {
	t.Helper()
	eventually(t, "served hosts to be "+joinHosts(want), func() bool { return joinHosts(publishedHosts(hc)) == joinHosts(want) })
}

func joinHosts(hosts []string) string { return strings.Join(hosts, " ") }

// TestRelistAfterAWatchGapDropsWhatWentMeanwhile: an Ingress deleted while
// the watch was down, and a host renamed meanwhile, are both set right by
// the relist: the FIFO's tombstone for the key the new list lacks reaches
// the store.
func TestRelistAfterAWatchGapDropsWhatWentMeanwhile(t *testing.T) {
	lw := &scriptedLW{watches: make(chan *watch.FakeWatcher, 4), lists: [][]*networking.Ingress{
		{ingress("a", "gone", "", "gone.example.com"), ingress("a", "kept", "", "kept.example.com")},
		{ingress("a", "kept", "", "renamed.example.com")},
	}}
	hc := scriptedIngressCache(t, lw)
	wantPublished(t, hc, "gone.example.com.", "kept.example.com.")
	w := <-lw.watches
	lw.mu.Lock()
	lw.expire = true
	lw.mu.Unlock()
	w.Stop() // the watch drops; rewatching is refused as expired: a relist
	wantPublished(t, hc, "renamed.example.com.")
	if n := ownerCount(hc); n != 1 {
		t.Fatalf("%d owners after the relist, want 1", n)
	}
}

// TestWatchEventsReachTheStore: adds, updates (a host moves), and deletes
// over the watch; an Ingress that names no host is not kept.
func TestWatchEventsReachTheStore(t *testing.T) {
	lw := &scriptedLW{watches: make(chan *watch.FakeWatcher, 4), lists: [][]*networking.Ingress{{ingress("a", "app", "", "app.example.com")}}}
	hc := scriptedIngressCache(t, lw)
	w := <-lw.watches
	w.Add(ingress("b", "new", "", "new.example.com"))
	wantPublished(t, hc, "app.example.com.", "new.example.com.")
	w.Modify(ingress("a", "app", "", "moved.example.com"))
	wantPublished(t, hc, "moved.example.com.", "new.example.com.")
	w.Modify(ingress("b", "new", ""))
	wantPublished(t, hc, "moved.example.com.")
	w.Delete(ingress("a", "app", "", "moved.example.com"))
	wantPublished(t, hc)
	hc.mu.Lock()
	left := len(hc.ingresses.entries)
	hc.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d entries kept, want none", left)
	}
}

// TestResyncRedeliversTheStoreUnchanged: a resync (the FIFO's Sync deltas
// of what the store holds) is applied and changes nothing.
func TestResyncRedeliversTheStoreUnchanged(t *testing.T) {
	hc := newHostCache(nil, settings{zones: []string{"example.com."}, proxyIPs: ips("127.77.0.10"), labels: labels.Everything()})
	view := ingressView{s: hc.ingresses}
	fifo := cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{KeyFunction: ingressKey, KnownObjects: view, Transformer: newIngressEntry(hc.selected, newInterner(8))})
	if err := fifo.Replace([]any{ingress("a", "app", "", "app.example.com")}, "1"); err != nil {
		t.Fatal(err)
	}
	// pop applies the next delta and returns it; a FIFO left empty fails.
	pop := func() cache.Delta {
		t.Helper()
		got := make(chan cache.Delta, 1)
		go func() {
			_, _ = fifo.Pop(func(obj any, _ bool) error {
				hc.mu.Lock()
				defer hc.mu.Unlock()
				d := obj.(cache.Deltas).Newest()
				view.apply(*d, time.Now())
				got <- *d
				return nil
			})
		}()
		select {
		case d := <-got:
			return d
		case <-time.After(5 * time.Second):
			fifo.Close()
			t.Fatal("nothing queued")
			return cache.Delta{}
		}
	}
	pop()
	if hosts := publishedHosts(hc); joinHosts(hosts) != "app.example.com." {
		t.Fatalf("served %v after the list", hosts)
	}
	if err := fifo.Resync(); err != nil {
		t.Fatal(err)
	}
	d := pop()
	hc.mu.Lock()
	stored := hc.ingresses.entries["a/app"]
	hc.mu.Unlock()
	if d.Type != cache.Sync || d.Object != stored {
		t.Fatalf("resync queued %s %T, want a Sync of the stored entry", d.Type, d.Object)
	}
	if _, changed, _ := hc.claims.publish(); changed {
		t.Fatal("a resync changed the index")
	}
	if hosts := served(hc); joinHosts(hosts) != "app.example.com." {
		t.Fatalf("served %v after the resync", hosts)
	}
}
