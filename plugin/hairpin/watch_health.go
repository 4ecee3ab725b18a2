package hairpin

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// kindWatch is the health of one watched kind: whether its first list has
// reached the handlers, and why its list or watch fails. It replaces
// client-go's default watch error handler, so that failures are counted and
// logged once per change of reason instead of on every retry.
type kindWatch struct {
	hc       *hostCache
	kind     string
	required bool // gates readiness until startup_timeout
	synced   atomic.Bool
	regs     []cache.InformerSynced

	mu      sync.Mutex
	failing string    // the reason of the last failure; "" while healthy
	logged  time.Time // when the failure was last logged
}

// failureLogInterval is how often an unchanged failure is logged again.
const failureLogInterval = 5 * time.Minute

// addKind registers a kind; required kinds gate readiness. The caller
// holds hc.mu, or runs before the cache starts.
func (hc *hostCache) addKind(kind string, required bool) *kindWatch {
	k := &kindWatch{hc: hc, kind: kind, required: required}
	hc.kinds = append(hc.kinds, k)
	kindSynced.WithLabelValues(hc.id, kind).Set(0)
	return k
}

// informer wires inf to the kind: the error handler, and the sync of the
// handlers registered on it. It must run before inf starts.
func (k *kindWatch) informer(inf cache.SharedIndexInformer, handlers cache.ResourceEventHandler) error {
	if err := inf.SetWatchErrorHandlerWithContext(k.onError); err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(handlers)
	if err != nil {
		return err
	}
	k.regs = append(k.regs, reg.HasSynced)
	return nil
}

// waitSynced marks the kind synced once every handler has seen its first
// list. It runs in its own goroutine until then or until the cache stops.
func (k *kindWatch) waitSynced() {
	defer k.hc.wg.Done()
	if !cache.WaitForCacheSync(k.hc.stopCh, k.regs...) {
		return
	}
	k.markSynced()
	k.hc.schedulePublish()
}

// markSynced records that the kind's first list has reached its handlers,
// and says so when it recovers from a failure.
func (k *kindWatch) markSynced() {
	k.synced.Store(true)
	kindSynced.WithLabelValues(k.hc.id, k.kind).Set(1)
	k.mu.Lock()
	recovered := k.failing != ""
	k.failing = ""
	k.mu.Unlock()
	if recovered {
		log.Infof("%s: listed; its hosts are served again", k.kind)
	}
}

// removeKindLocked forgets a kind that is no longer watched, with its
// series. The caller holds hc.mu.
func (hc *hostCache) removeKindLocked(k *kindWatch) {
	hc.kinds = slices.DeleteFunc(hc.kinds, func(o *kindWatch) bool { return o == k })
	kindSynced.DeleteLabelValues(hc.id, k.kind)
	watchErrors.DeletePartialMatch(prometheus.Labels{"cache": hc.id, "kind": k.kind})
}

// onError is the informer's watch error handler.
func (k *kindWatch) onError(_ context.Context, _ *cache.Reflector, err error) {
	reason := errorReason(err)
	if reason == "" {
		return // a watch that ended normally; the reflector re-lists
	}
	watchErrors.WithLabelValues(k.hc.id, k.kind, reason).Inc()
	now := time.Now()
	k.mu.Lock()
	again := reason == k.failing && now.Sub(k.logged) < failureLogInterval
	if !again {
		k.failing, k.logged = reason, now
	}
	k.mu.Unlock()
	if again {
		return
	}
	impact := "its hosts are not served until it lists"
	if k.synced.Load() {
		impact = "its hosts are served as last listed"
	}
	log.Warningf("cannot list/watch %s (%s): %v; %s, other names are unaffected", k.kind, reason, err, impact)
}

// onRetry is where the retry transport reports the failures it retries:
// the error handler of the kind that the resource is watched as. Services
// in a namespace that a direct target names are that namespace's own
// watch, not the targets' one.
func (hc *hostCache) onRetry(resource, namespace string, err error) {
	kind, direct := kindOfResource(resource), ""
	if resource == "services" && namespace != "" {
		direct = directKind(namespace)
	}
	hc.mu.Lock()
	var k *kindWatch
	for _, kw := range hc.kinds {
		if kw.kind == direct {
			k = kw
			break
		}
		if kw.kind == kind && k == nil {
			k = kw
		}
	}
	hc.mu.Unlock()
	if k != nil {
		k.onError(context.Background(), nil, err)
	}
}

// errorReason classifies a list or watch failure for the reason label; ""
// for a watch that simply ended.
func errorReason(err error) string {
	var netErr net.Error
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ""
	case apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		return "expired"
	case apierrors.IsForbidden(err):
		return "forbidden"
	case apierrors.IsUnauthorized(err):
		return "unauthorized"
	case apierrors.IsNotFound(err):
		return "not_found"
	case apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err), apierrors.IsTimeout(err),
		apierrors.IsServerTimeout(err), errors.As(err, &netErr):
		return "unavailable"
	}
	return "other"
}

// requiredSynced reports whether every required kind has synced.
func (hc *hostCache) requiredSynced() bool {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for _, k := range hc.kinds {
		if k.required && !k.synced.Load() {
			return false
		}
	}
	return true
}

// unsyncedKinds lists the kinds that have not synced.
func (hc *hostCache) unsyncedKinds() []string {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	var out []string
	for _, k := range hc.kinds {
		if !k.synced.Load() {
			out = append(out, k.kind)
		}
	}
	return out
}
