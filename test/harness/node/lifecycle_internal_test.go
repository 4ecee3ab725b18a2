package node

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPostStartFailureRestartsOnlyItsOwnInstance runs a postStart hook
// that fails (it has no handler): while its instance runs, the
// failure asks for a restart; once the instance has ended, it is no
// verdict, so the next instance is not killed for it.
func TestPostStartFailureRestartsOnlyItsOwnInstance(t *testing.T) {
	for _, tc := range []struct {
		name         string
		instanceEnds bool
		wantRestart  bool
	}{
		{name: "WhileItsInstanceRuns", wantRestart: true},
		{name: "AfterItsInstanceEnded", instanceEnds: true, wantRestart: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p, _ := unitNode(t, corev1.Container{Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{}}})
			c := p.containers[0]
			ctx, cancel := context.WithCancel(t.Context())
			if tc.instanceEnds {
				cancel()
			}
			defer cancel()
			c.postStart(ctx)
			var got *restart
			select {
			case req := <-c.kill:
				got = &req
			default:
			}
			if (got != nil) != tc.wantRestart {
				t.Fatalf("restart requested: %+v, want one: %v", got, tc.wantRestart)
			}
		})
	}
}
