package node

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestProbeRunStopsRightAfterItsStart stops a container's probes as soon
// as they start, as runOnce does when the process exits at once (a short
// command, a crash loop): stop must wait for every probe goroutine, the
// first one included (under -race, an Add inside that goroutine races
// with stop's Wait), and leave no flag set after it.
func TestProbeRunStopsRightAfterItsStart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		probe *corev1.Probe // the readiness probe; nil: none
	}{
		{name: "WithoutProbes"},
		{name: "WithAReadinessProbe", probe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
			PeriodSeconds: 1, InitialDelaySeconds: 60,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p, _ := unitNode(t, corev1.Container{ReadinessProbe: tc.probe})
			c := p.containers[0]
			for range 200 {
				probes := newProbeRun(c, &process{startedAt: time.Now(), done: make(chan struct{})})
				probes.start()
				probes.stop()
				c.setFlags(false, false)
				time.Sleep(time.Millisecond) // a goroutine stop did not wait for would set them now
				c.mu.Lock()
				started, ready := c.started, c.ready
				c.mu.Unlock()
				if started || ready {
					t.Fatalf("a probe set started=%v ready=%v after stop returned", started, ready)
				}
			}
		})
	}
}
