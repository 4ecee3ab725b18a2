package kubectlhairpin

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// directServiceAnnotation makes a target direct: its hosts are answered
// with the ClusterIPs of the Service it names (namespace/name), and the
// target Service only carries the annotations.
const directServiceAnnotation = "hairpin.coredns-hairpin.io/direct-service"

// gatherDirect reads the Service that each direct target names.
func (g *gatherer) gatherDirect(ctx context.Context) error {
	for i := range g.f.Targets {
		t := &g.f.Targets[i]
		value, ok := t.Service.Annotations[directServiceAnnotation]
		if !ok {
			continue
		}
		t.Direct = strings.TrimSpace(value)
		ns, name, err := parseNamespacedName(t.Direct)
		if err != nil {
			t.DirectErr = fmt.Errorf("annotation %s: %w", directServiceAnnotation, err)
			continue
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

// parseNamespacedName reads "namespace/name", both DNS labels.
func parseNamespacedName(s string) (string, string, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Label(name)) > 0 {
		return "", "", fmt.Errorf("%q is not namespace/name", s)
	}
	return ns, name, nil
}
