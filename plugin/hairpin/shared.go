package hairpin

import (
	"fmt"
	"sync"
)

// Server blocks with the same settings share one cache, and a reload with
// unchanged settings keeps it: caddy starts the new instance before it shuts
// the old one down, so the count never drops to zero in between and the
// watches are not re-listed.
var shared = struct {
	sync.Mutex
	caches map[string]*sharedCache
}{caches: map[string]*sharedCache{}}

type sharedCache struct {
	cache *hostCache
	refs  int
}

// cacheLease is one server block's hold on a shared cache.
type cacheLease struct {
	key   string
	cache *hostCache
	once  sync.Once
}

// acquireCache returns a lease on the cache for key, creating and starting it
// with build when no block holds one.
func acquireCache(key string, build func() (*hostCache, error)) (*cacheLease, error) {
	shared.Lock()
	defer shared.Unlock()
	if sc, ok := shared.caches[key]; ok {
		sc.refs++
		return &cacheLease{key: key, cache: sc.cache}, nil
	}
	hc, err := build()
	if err != nil {
		return nil, err
	}
	if err := hc.start(); err != nil {
		hc.stop()
		return nil, fmt.Errorf("starting watches: %w", err)
	}
	shared.caches[key] = &sharedCache{cache: hc, refs: 1}
	return &cacheLease{key: key, cache: hc}, nil
}

// release drops the lease; the last one stops the cache. It is idempotent.
func (l *cacheLease) release() {
	l.once.Do(func() {
		shared.Lock()
		sc, ok := shared.caches[l.key]
		if !ok || sc.cache != l.cache {
			shared.Unlock()
			return
		}
		sc.refs--
		last := sc.refs == 0
		if last {
			delete(shared.caches, l.key)
		}
		shared.Unlock()
		if last {
			l.cache.stop()
		}
	})
}
