package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// TestDemoStory runs the story of `make demo`, every step with its claim
// (broken, install, fixed per controller, survives a re-render, uninstall),
// and fails on the first claim that is not true, with the story so far. It
// runs as DEMO_KEEP=1 does, with Enter pressed at the pause.
func TestDemoStory(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: starts kube-apiserver, etcd, two nginx, CoreDNS, helm and the proxy")
	}
	for _, tc := range []struct {
		name     string
		loopback bool
	}{
		{"RealDataplane", false},
		{"Loopback", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.loopback {
				if why := dataplaneUnavailable(); why != "" {
					harness.SkipOrFail(t, "demo: %s", why)
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
			defer cancel()
			var out bytes.Buffer
			paused := false
			st := &story{w: &out, root: t.TempDir(), keep: true, loopback: tc.loopback, wait: func(context.Context) bool { paused = true; return true }}
			err := st.run(ctx, t)
			t.Logf("the story:\n%s", out.String())
			if err != nil {
				t.Fatal(err)
			}
			if !paused {
				t.Error("DEMO_KEEP=1 did not pause before the uninstall")
			}
		})
	}
}
