package hairpin

import (
	"fmt"
	"sync"

	"github.com/coredns/caddy"
)

// Server blocks with the same settings share one cache, and a reload with
// unchanged settings keeps it: caddy starts the new instance before it shuts
// the old one down, so the count never drops to zero in between and the
// watches are not re-listed.
var shared = struct {
	sync.Mutex
	caches map[string]*sharedCache
	leases map[*cacheLease]struct{}
}{caches: map[string]*sharedCache{}, leases: map[*cacheLease]struct{}{}}

type sharedCache struct {
	cache *hostCache
	refs  int
}

// cacheLease is one server block's hold on a shared cache.
type cacheLease struct {
	key   string
	cache *hostCache
	owner *instanceTag // the caddy instance the block belongs to; nil if untracked
	once  sync.Once
}

// instanceTag marks a caddy instance, through its Storage, so that a lease
// can tell whether its instance still exists. It is not zero-sized: pointers
// to zero-sized values may all be equal.
type instanceTag struct{ _ byte }

type instanceTagKey struct{}

// instanceToken returns the tag of c's instance, creating it on first use.
func instanceToken(c *caddy.Controller) *instanceTag {
	if t, ok := c.Get(instanceTagKey{}).(*instanceTag); ok {
		return t
	}
	t := &instanceTag{}
	c.Set(instanceTagKey{}, t)
	return t
}

// liveInstance reports whether an instance tagged t is in caddy's list.
func liveInstance(t *instanceTag) bool {
	for _, inst := range caddy.Instances() {
		inst.StorageMu.RLock()
		v := inst.Storage[instanceTagKey{}]
		inst.StorageMu.RUnlock()
		if v == t {
			return true
		}
	}
	return false
}

// acquireCache returns a lease on the cache for key, creating and starting it
// with build when no block holds one. build and start make no network call:
// the global lock is held here.
func acquireCache(key string, owner *instanceTag, build func() (*hostCache, error)) (*cacheLease, error) {
	if owner != nil && !liveInstance(owner) {
		owner = nil // not a caddy-started instance (tests): never swept
	}
	shared.Lock()
	defer shared.Unlock()
	if sc, ok := shared.caches[key]; ok {
		sc.refs++
		return trackLocked(&cacheLease{key: key, cache: sc.cache, owner: owner}), nil
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
	return trackLocked(&cacheLease{key: key, cache: hc, owner: owner}), nil
}

// trackLocked records l so that an orphan can be found; the caller holds
// shared's lock.
func trackLocked(l *cacheLease) *cacheLease {
	shared.leases[l] = struct{}{}
	return l
}

// release drops the lease; the last one stops the cache. It is idempotent.
func (l *cacheLease) release() {
	l.once.Do(func() {
		shared.Lock()
		delete(shared.leases, l)
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

// releaseOrphanLeases releases the leases of instances that caddy discarded
// after their startup callbacks ran (a reload whose servers failed to
// start): nothing else would ever release them.
func releaseOrphanLeases() {
	shared.Lock()
	var orphans []*cacheLease
	for l := range shared.leases {
		if l.owner != nil && !liveInstance(l.owner) {
			orphans = append(orphans, l)
		}
	}
	shared.Unlock()
	for _, l := range orphans {
		log.Infof("releasing the watches of a server instance that failed to start")
		l.release()
	}
}
