package kubectlhairpin

import (
	"context"
	"strings"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gatherDirect reads the Service that each direct target names (the
// annotation rules.DirectServiceAnnotation): its hosts are answered with
// that Service's ClusterIPs, and the target Service only carries the
// annotations.
func (g *gatherer) gatherDirect(ctx context.Context) error {
	for i := range g.f.Targets {
		t := &g.f.Targets[i]
		value, ok := t.Service.Annotations[rules.DirectServiceAnnotation]
		if !ok {
			continue
		}
		t.Direct = strings.TrimSpace(value)
		if t.Err != nil && strings.Contains(t.Err.Error(), rules.DirectServiceAnnotation) {
			t.DirectErr = t.Err
			continue
		}
		ns, name, ok := strings.Cut(t.Direct, "/")
		if !ok {
			continue // the spec stopped at another annotation's error
		}
		svc, err := g.c.Kube.CoreV1().Services(ns).Get(ctx, name, meta.GetOptions{})
		switch {
		case err == nil:
			t.DirectRead, t.DirectService = true, svc
		case apierrors.IsNotFound(err):
			t.DirectRead = true // it is missing
		default:
			if _, err := g.read(err, "get services/"+name+" in "+ns, "the address of direct target "+targetName(*t)+" is unknown"); err != nil {
				return err
			}
		}
	}
	return nil
}
