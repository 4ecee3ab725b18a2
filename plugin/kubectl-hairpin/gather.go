package kubectlhairpin

import (
	"context"
	"errors"
	"fmt"

	"github.com/coredns-hairpin/hairpin/plugin/hairpin/rules"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ErrUnreadable wraps the error of a cluster that could not be read at
// all: unreachable, or the credentials were refused.
var ErrUnreadable = errors.New("the cluster could not be read")

// gatherer reads the cluster into facts. Its methods fill one part each
// (gather_*.go), in an order where later parts use earlier ones.
type gatherer struct {
	c     Clients
	f     *Facts
	api   servedAPIs
	cache objects

	// deploymentsDenied, daemonSetsDenied: they could not be listed, so
	// what is looked for among them is looked for some other way.
	deploymentsDenied, daemonSetsDenied bool
	// candidates are the controllers found, whether or not something says
	// yet that they require PROXY; Facts.Controllers are those that do.
	candidates []*Controller
}

// Gather reads the cluster. It fails, wrapping ErrUnreadable, only when
// the apiserver cannot be reached or refuses the credentials; a read the
// caller may not make is recorded in Facts.Denied instead.
func Gather(ctx context.Context, c Clients, opts Options) (*Facts, error) {
	g := &gatherer{c: c, f: &Facts{Options: opts.withDefaults(), TargetSet: rules.Set{}}}
	steps := []func(context.Context) error{
		g.discover,
		g.listObjects,
		g.gatherDataplane,
		g.gatherTargets,
		g.gatherDirect,
		g.gatherCoreDNS,
		g.gatherCorefile,
		g.gatherIngressNginx,
		g.gatherGatewayControllers,
		g.gatherLBAnnotations,
		g.gatherHostObjects,
		g.gatherNodeLocalDNS,
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
		}
	}
	return g.f, nil
}

// read classifies the error of one read: nil goes on (true); a forbidden
// read is recorded and a missing object or kind is absent (false, nil);
// anything else stops the run.
func (g *gatherer) read(err error, what, impact string) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsForbidden(err):
		g.f.Denied = append(g.f.Denied, Denied{Read: what, Impact: impact})
		return false, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("%s: %w", what, err)
}

// keep is read for a list whose items keep stores when it succeeded.
func (g *gatherer) keep(err error, what, impact string, keep func()) error {
	ok, err := g.read(err, what, impact)
	if ok {
		keep()
	}
	return err
}
