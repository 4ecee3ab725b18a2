package hairpin

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	networking "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// refusing is an apiserver stand-in that answers status to the first n
// requests and 200 after.
func refusing(t *testing.T, status int, n int32) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) <= n {
			w.WriteHeader(status)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestRetryTransportRetriesWhatEndsByItself(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		retried bool
		reason  func(error) bool
	}{
		{"forbidden until the RBAC exists", http.StatusForbidden, true, apierrors.IsForbidden},
		{"unauthorized until the token is known", http.StatusUnauthorized, true, apierrors.IsUnauthorized},
		{"unavailable while the apiserver starts", http.StatusServiceUnavailable, true, apierrors.IsServiceUnavailable},
		{"not found is the reflector's to handle", http.StatusNotFound, false, nil},
		{"gone is the reflector's to relist", http.StatusGone, false, nil},
		{"too many requests keeps the reflector's backoff", http.StatusTooManyRequests, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, calls := refusing(t, tc.status, 3)
			r := newRetries()
			var mu sync.Mutex
			var reported []error
			r.setReport(func(resource, _ string, err error) {
				if resource != "ingresses" {
					t.Errorf("reported resource %q, want ingresses", resource)
				}
				mu.Lock()
				reported = append(reported, err)
				mu.Unlock()
			})
			c := &http.Client{Transport: r.wrap(http.DefaultTransport)}
			resp, err := c.Get(srv.URL + "/apis/networking.k8s.io/v1/ingresses?watch=true")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			if !tc.retried {
				if resp.StatusCode != tc.status || calls.Load() != 1 || len(reported) != 0 {
					t.Fatalf("status %d after %d calls, %d reported; want %d handed back at once", resp.StatusCode, calls.Load(), len(reported), tc.status)
				}
				return
			}
			if resp.StatusCode != http.StatusOK || calls.Load() != 4 {
				t.Fatalf("status %d after %d calls; want 200 after 4", resp.StatusCode, calls.Load())
			}
			if len(reported) != 3 {
				t.Fatalf("%d failures reported, want 3", len(reported))
			}
			for _, err := range reported {
				if !tc.reason(err) {
					t.Errorf("reported %v, of the wrong reason", err)
				}
			}
		})
	}
}

func TestRetryTransportRetriesAnApiserverThatIsDown(t *testing.T) {
	// A port nothing listens on, until a server takes it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r := newRetries()
	var refused atomic.Int32
	r.setReport(func(_, _ string, err error) {
		if refused.Add(1) == 3 {
			// Back after three refused connections.
			l, lerr := net.Listen("tcp", addr)
			if lerr != nil {
				t.Error(lerr)
				return
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})}
			go srv.Serve(l)
			t.Cleanup(func() { srv.Close() })
		}
	})
	c := &http.Client{Transport: r.wrap(&http.Transport{})}
	start := time.Now()
	resp, err := c.Get("http://" + addr + "/api/v1/namespaces/hairpin-system/services")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Three delays of at most 100, 200 and 400 ms.
	if took := time.Since(start); resp.StatusCode != http.StatusOK || took > 2*time.Second {
		t.Fatalf("status %d after %s; want 200 within the backoff's first steps", resp.StatusCode, took)
	}
}

func TestRetryTransportLeavesWritesAndCancelledRequestsAlone(t *testing.T) {
	srv, calls := refusing(t, http.StatusForbidden, 100)
	c := &http.Client{Transport: newRetries().wrap(http.DefaultTransport)}
	resp, err := c.Post(srv.URL+"/api/v1/namespaces", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || calls.Load() != 1 {
		t.Fatalf("POST: status %d after %d calls; want 403 at once", resp.StatusCode, calls.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/services", nil)
	_, err = c.Do(req)
	if !apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("a GET refused until its context ended returned %v; want the refusal", err)
	}
}

func TestRetryTransportWakeRetriesAtOnce(t *testing.T) {
	var allowed atomic.Bool
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		if !allowed.Load() {
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	defer srv.Close()
	r := newRetries()
	c := &http.Client{Transport: r.wrap(http.DefaultTransport)}
	done := make(chan time.Time, 1)
	go func() {
		resp, err := c.Get(srv.URL + "/apis/networking.k8s.io/v1/ingresses")
		if err == nil {
			resp.Body.Close()
		}
		done <- time.Now()
	}()
	// Let the backoff grow: 100+200+400 ms.
	for calls.Load() < 4 {
		time.Sleep(10 * time.Millisecond)
	}
	allowed.Store(true)
	woken := time.Now()
	r.wake()
	select {
	case at := <-done:
		if at.Sub(woken) > 500*time.Millisecond {
			t.Fatalf("answered %s after the wake", at.Sub(woken))
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the wake did not retry")
	}
}

func TestKindOfResourceNamesTheWatchedKind(t *testing.T) {
	for resource, kind := range map[string]string{
		"ingresses": "ingress", "ingressclasses": "ingressclass", "services": "service",
		"gateways": "gateway", "httproutes": "httproute", "grpcroutes": "grpcroute", "tlsroutes": "tlsroute",
	} {
		if got := kindOfResource(resource); got != kind {
			t.Errorf("kindOfResource(%q) = %q, want %q", resource, got, kind)
		}
	}
}

// ingressAPI is an apiserver stand-in serving an empty Ingress list and
// watches that stay open; it counts the requests it got.
type ingressAPI struct {
	requests atomic.Int32
}

func (a *ingressAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.requests.Add(1)
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("watch") != "true" {
		_, _ = w.Write([]byte(`{"kind":"IngressList","apiVersion":"networking.k8s.io/v1","metadata":{"resourceVersion":"1"},"items":[]}`))
		return
	}
	if r.URL.Query().Get("sendInitialEvents") == "true" {
		_, _ = w.Write([]byte(`{"type":"BOOKMARK","object":{"kind":"Ingress","apiVersion":"networking.k8s.io/v1","metadata":{"resourceVersion":"1","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n"))
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// TestWatchRecoversWithinASecondOfAnApiserverOutage is the apiserver
// outage of the lifecycle test on the real client stack: client-go's
// reflector on the plugin's client, the apiserver gone for 6 s. Left to
// the reflector's backoff, the first try after the outage could come 6 s
// after the apiserver was back.
func TestWatchRecoversWithinASecondOfAnApiserverOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a 6 s outage")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	api := &ingressAPI{}
	srv := &http.Server{Handler: api}
	go srv.Serve(l)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://`+addr+`"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	newClients, err := clientFactory(settings{kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	c, err := newClients()
	if err != nil {
		t.Fatal(err)
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := cache.NewReflector(ingressListWatch(c.kube, "", nil), &networking.Ingress{}, store, 0)
	stop := make(chan struct{})
	defer close(stop)
	go r.Run(stop)
	eventually(t, "the first list", func() bool { return r.LastSyncResourceVersion() == "1" })

	// The outage: every connection closed, nothing listening for 6 s.
	time.Sleep(200 * time.Millisecond)
	srv.Close()
	time.Sleep(6 * time.Second)
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	api2 := &ingressAPI{}
	srv2 := &http.Server{Handler: api2}
	go srv2.Serve(l)
	defer srv2.Close()
	back := time.Now()
	for api2.requests.Load() == 0 {
		if time.Since(back) > 10*time.Second {
			t.Fatal("no list or watch in 10 s after the apiserver came back")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if took := time.Since(back); took > 1500*time.Millisecond {
		t.Fatalf("the first list or watch came %s after the apiserver was back; want within a second or so", took)
	}
}
