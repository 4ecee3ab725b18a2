package hairpin

import (
	"sync"
	"time"
)

// onceLog runs a log call at most once per distinct key per onceLogWindow,
// so that a failure repeated on every query cannot flood CoreDNS's log.
type onceLog struct {
	mu   sync.Mutex
	last map[string]time.Time
}

const onceLogWindow = time.Minute

func newOnceLog() *onceLog { return &onceLog{last: map[string]time.Time{}} }

func (l *onceLog) do(key string, f func()) {
	now := time.Now()
	l.mu.Lock()
	if t, ok := l.last[key]; ok && now.Sub(t) < onceLogWindow {
		l.mu.Unlock()
		return
	}
	if len(l.last) > 1000 {
		clear(l.last)
	}
	l.last[key] = now
	l.mu.Unlock()
	f()
}
