package manifests

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// listenPort is the listen part of a --route value.
var listenPort = regexp.MustCompile(`^--route=:\d+=`)

// TestProxyAcceptsTheRenderedArgs runs our hairpin-proxy binary with the
// arguments each render gives its container, moved to loopback (each route
// on a free port, the health address too, no shutdown delays), and checks
// that it starts, serves /healthz and stops cleanly: the chart renders
// nothing the proxy rejects (it exits 2 on a bad flag or route).
func TestProxyAcceptsTheRenderedArgs(t *testing.T) {
	bin := harness.RequireBinary(t, "hairpin-proxy")
	for _, r := range renderAll(t) {
		t.Run(r.name, func(t *testing.T) {
			d := find[*appsv1.Deployment](r.objs, proxyName)
			if d == nil {
				t.Fatal("no proxy Deployment")
			}
			health := harness.FreeAddr(t, "127.0.0.1")
			var args []string
			for _, a := range d.Spec.Template.Spec.Containers[0].Args {
				switch {
				case listenPort.MatchString(a):
					a = listenPort.ReplaceAllString(a, "--route="+harness.FreeAddr(t, "127.0.0.1")+"=")
				case len(a) > len("--health-addr=") && a[:len("--health-addr=")] == "--health-addr=":
					a = "--health-addr=" + health
				}
				args = append(args, a)
			}
			// The last flag wins: stop at once on SIGTERM.
			args = append(args, "--lameduck=0s", "--drain-timeout=0s")
			proc := harness.StartCmd(t, "hairpin-proxy", exec.Command(bin, args...))
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if err := proc.Ready(ctx, harness.HTTPProbe(fmt.Sprintf("http://%s/healthz", health))); err != nil {
				t.Fatalf("hairpin-proxy %v does not serve /healthz: %v\n%s", args, err, proc.Output())
			}
			if err := proc.Stop(); err != nil {
				t.Errorf("stop: %v\n%s", err, proc.Output())
			}
		})
	}
}
