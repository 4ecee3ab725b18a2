package hairpin

import "time"

// defaultSettle is how long a new target has been ready before it takes a
// host that a Serving target answers: kube-proxy programs a Service's
// endpoints at its next sync after the EndpointSlice says ready, at least
// its min sync period (1 s) after the last one, so the new ClusterIP worked
// about 1.1 s after readiness on nftables; 2 s covers that and the writing
// of the rules.
const defaultSettle = 2 * time.Second

// settleLaterLocked schedules the end of t's Settling at its settle
// deadline: the hosts that wait for it move then, by this one timer, not a
// poll. A deadline that passes while t is unready does nothing; its next
// readiness schedules a new one. The caller holds hc.mu.
func (hc *hostCache) settleLaterLocked(t *target) {
	if t.settleTimer != nil {
		return
	}
	since := t.readySince
	t.settleTimer = time.AfterFunc(time.Until(since.Add(hc.settings.settle)), func() {
		hc.mu.Lock()
		defer hc.mu.Unlock()
		select {
		case <-hc.stopCh:
			return
		default:
		}
		// A target deleted, or unready since, has no deadline here.
		if hc.targets[t.Name] != t || !t.Settling || !t.readySince.Equal(since) {
			return
		}
		t.settleTimer = nil
		t.Settling = false
		log.Infof("target %s has been ready for %s; the hosts it wins from other targets move to it", t.Name, hc.settings.settle)
		hc.targetsChangedLocked()
	})
}

// stopSettle cancels t's settle deadline: its Service is no longer ready,
// or t is gone. The caller holds hostCache.mu.
func (t *target) stopSettle() {
	if t.settleTimer != nil {
		t.settleTimer.Stop()
		t.settleTimer = nil
	}
}

// anySettlingLocked reports whether some target is Settling: only then
// does whether the others are ready change a selection.
func (hc *hostCache) anySettlingLocked() bool {
	for _, t := range hc.targets {
		if t.Settling {
			return true
		}
	}
	return false
}
