package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// dialErrorLog turns a storm of dial failures into a bounded number of log
// lines: the first failure after a quiet period is logged at once (so an
// outage shows up immediately), later ones are only counted and summarised
// once per interval.
type dialErrorLog struct {
	log      *slog.Logger
	interval time.Duration

	mu         sync.Mutex
	lastLogged time.Time
	pending    map[string]*dialErrorCount // by route
}

type dialErrorCount struct {
	causes  map[string]int
	total   int
	lastErr string
	target  string
}

func newDialErrorLog(log *slog.Logger, interval time.Duration) *dialErrorLog {
	return &dialErrorLog{log: log, interval: interval, pending: map[string]*dialErrorCount{}}
}

func (d *dialErrorLog) record(route, upstream, cause string, err error) {
	d.mu.Lock()
	now := time.Now()
	if now.Sub(d.lastLogged) >= d.interval && len(d.pending) == 0 {
		d.lastLogged = now
		d.mu.Unlock()
		d.log.Warn("upstream dial failed; further failures are summarised",
			"route", route, "upstream", upstream, "cause", cause, "err", err,
			"summary_interval", d.interval)
		return
	}
	c := d.pending[route]
	if c == nil {
		c = &dialErrorCount{causes: map[string]int{}, target: upstream}
		d.pending[route] = c
	}
	c.causes[cause]++
	c.total++
	c.lastErr = err.Error()
	d.mu.Unlock()
}

// flush logs one summary line per route with failures since the last flush.
func (d *dialErrorLog) flush() {
	d.mu.Lock()
	pending := d.pending
	if len(pending) > 0 {
		d.pending = map[string]*dialErrorCount{}
		d.lastLogged = time.Now()
	}
	d.mu.Unlock()
	routes := make([]string, 0, len(pending))
	for r := range pending {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	for _, r := range routes {
		c := pending[r]
		causes := make([]string, 0, len(c.causes))
		for k, v := range c.causes {
			causes = append(causes, fmt.Sprintf("%s=%d", k, v))
		}
		sort.Strings(causes)
		d.log.Warn("upstream dial failures",
			"route", r, "upstream", c.target, "count", c.total,
			"causes", strings.Join(causes, ","), "last_err", c.lastErr)
	}
}

// run flushes every interval until ctx ends, then once more so a final burst
// is not lost at shutdown.
func (d *dialErrorLog) run(ctx context.Context) {
	t := time.NewTicker(d.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			d.flush()
			return
		case <-t.C:
			d.flush()
		}
	}
}
