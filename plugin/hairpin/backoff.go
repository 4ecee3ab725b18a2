package hairpin

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// retryTransport retries the GETs of lists and watches that fail for a
// reason that ends by itself (forbidden: the chart's RBAC is not there yet;
// unauthorized; an apiserver that does not answer) with a short backoff of
// its own, instead of handing the failure to client-go's reflector, whose
// backoff doubles from 0.8 s to 30 s and forgets only after two minutes of
// calm: a replica that started before the chart's RBAC existed, or lived
// through an apiserver outage, served its hosts up to 30 s late.
//
// The delay starts at retryInitial and doubles up to a cap (retryCapDown
// for an apiserver that does not answer, retryCapDenied for a refusal),
// each delay drawn from the upper half of its value so that replicas do not
// retry in step. wake starts every waiting retry over at once: the target
// watch calls it when a target appears, because the chart creates CoreDNS's
// RBAC just before its targets. Every failure is reported, so the kind's
// metric and log line say what the reflector would have said.
type retryTransport struct {
	next http.RoundTripper
	r    *retries
}

// retries is what the retry transports of one cache's clients share.
type retries struct {
	mu     sync.Mutex
	report func(resource, namespace string, err error)
	wakeCh chan struct{} // closed and replaced by wake
}

// Delays of retryTransport.
const (
	retryInitial   = 100 * time.Millisecond
	retryCapDown   = time.Second
	retryCapDenied = 5 * time.Second
)

func newRetries() *retries { return &retries{wakeCh: make(chan struct{})} }

// wrap is a rest.Config's WrapTransport: next with retries.
func (r *retries) wrap(next http.RoundTripper) http.RoundTripper {
	return &retryTransport{next: next, r: r}
}

// setReport sets where failures are reported.
func (r *retries) setReport(report func(resource, namespace string, err error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.report = report
}

// wake makes every waiting retry try again now, from the initial delay.
func (r *retries) wake() {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.wakeCh)
	r.wakeCh = make(chan struct{})
}

func (r *retries) waiter() (<-chan struct{}, func(string, string, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wakeCh, r.report
}

// RoundTrip implements http.RoundTripper.
func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || (req.Body != nil && req.Body != http.NoBody) {
		return t.next.RoundTrip(req)
	}
	backoff := retryInitial
	for {
		wake, report := t.r.waiter()
		resp, err := t.next.RoundTrip(req)
		failure, limit := retriable(req, resp, err)
		if failure == nil {
			return resp, err
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		if report != nil {
			report(resourceOf(req), namespaceOf(req), failure)
		}
		d := min(backoff, limit)
		backoff = min(2*backoff, limit)
		timer := time.NewTimer(d/2 + rand.N(d/2+1))
		select {
		case <-req.Context().Done():
			timer.Stop()
			return nil, failure
		case <-wake:
			timer.Stop()
			backoff = retryInitial
		case <-timer.C:
		}
	}
}

// retriable returns the failure of a round trip that is worth retrying,
// as the error the client would have returned, and its delay cap; nil for
// a round trip to hand back as it is.
func retriable(req *http.Request, resp *http.Response, err error) (error, time.Duration) {
	if req.Context().Err() != nil {
		return nil, 0
	}
	if err != nil {
		if unreachable(err) {
			return err, retryCapDown
		}
		return nil, 0
	}
	gr := schema.GroupResource{Resource: resourceOf(req)}
	switch resp.StatusCode {
	case http.StatusForbidden, http.StatusUnauthorized:
		return apierrors.NewGenericServerResponse(resp.StatusCode, "list", gr, "", "", 0, false), retryCapDenied
	case http.StatusServiceUnavailable:
		return apierrors.NewGenericServerResponse(resp.StatusCode, "list", gr, "", "", 0, false), retryCapDown
	}
	return nil, 0
}

// unreachable reports whether err says the apiserver did not answer: down,
// restarting, or not reachable yet.
func unreachable(err error) bool {
	var ne net.Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// resourceOf is the resource a list or watch URL names: its last path
// element ("ingresses" of /apis/networking.k8s.io/v1/namespaces/a/ingresses).
func resourceOf(req *http.Request) string {
	p := strings.TrimSuffix(req.URL.Path, "/")
	return p[strings.LastIndexByte(p, '/')+1:]
}

// namespaceOf is the namespace a request's path names ("" for a request
// across namespaces).
func namespaceOf(req *http.Request) string {
	_, rest, ok := strings.Cut(req.URL.Path, "/namespaces/")
	if !ok {
		return ""
	}
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}

// kindOfResource is the kind name a resource is watched under ("ingresses":
// "ingress", "httproutes": "httproute").
func kindOfResource(resource string) string {
	if strings.HasSuffix(resource, "sses") {
		return strings.TrimSuffix(resource, "es")
	}
	return strings.TrimSuffix(resource, "s")
}
