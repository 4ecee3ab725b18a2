package hairpin

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// objectStore is a watch's own store, in place of an informer's cache of
// every object: what it keeps of each object is up to it. The FIFO reads its
// keys (under the FIFO's lock; the store takes hostCache.mu) to turn a relist
// into deltas, and apply receives every delta in order, with hostCache.mu
// held.
type objectStore interface {
	cache.KeyListerGetter
	apply(d cache.Delta, now time.Time)
}

// watchInto wires a reflector on lw into store, the way an informer is built
// but without the informer's indexer: client-go's reflector lists, watches,
// and relists after a gap (an expired resourceVersion, a broken watch); its
// RealFIFO transforms each object, turns a relist into Replaced deltas plus a
// DeletedFinalStateUnknown tombstone for every key of the store that the new
// list lacks, and a resync into Sync deltas of what the store holds. Errors
// and the first sync go to k. Once the cache serves, what a small batch of
// deltas changed is published before the next batch. The watch starts with
// the cache.
func (hc *hostCache) watchInto(k *kindWatch, lw cache.ListerWatcher, objType runtime.Object, transform cache.TransformFunc, keyOf cache.KeyFunc, store objectStore) {
	fifo := cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{KeyFunction: keyOf, KnownObjects: store, Transformer: transform})
	process := func(deltas []cache.Delta) {
		now := time.Now()
		hc.mu.Lock()
		defer hc.mu.Unlock()
		for _, d := range deltas {
			store.apply(d, now)
		}
		// A change or two is served now, not after a hand-off to
		// publishLoop's goroutine, which on a busy node waits its turn
		// for a CPU; the batches of a burst are left to publishLoop,
		// which coalesces them.
		if len(deltas) <= liveBatch && hc.open.Load() {
			hc.publishLocked()
		}
	}
	ctrl := cache.New(&cache.Config{
		Queue:         fifo,
		ListerWatcher: lw,
		ObjectType:    objType,
		Process: func(obj any, _ bool) error {
			if d, ok := obj.(cache.Deltas); ok {
				process(d)
			}
			return nil
		},
		ProcessBatch:                 func(d []cache.Delta, _ bool) error { process(d); return nil },
		WatchErrorHandlerWithContext: k.onError,
	})
	k.regs = append(k.regs, ctrl.HasSynced)
	hc.watches.controllers = append(hc.watches.controllers, ctrl)
}

// liveBatch is the largest batch of deltas that watchInto publishes itself.
const liveBatch = 8

// runControllers starts the watches of watchInto; they end with stopCh.
func (hc *hostCache) runControllers() {
	for _, c := range hc.watches.controllers {
		hc.wg.Add(1)
		go func() {
			defer hc.wg.Done()
			c.Run(hc.stopCh)
		}()
	}
}
