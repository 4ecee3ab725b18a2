package dataplane

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
)

// standInPoll is how often the stand-ins of Cozystack's operators and of
// ouroboros's controller look at the cluster: a Deployment created or
// deleted is acted on within it, as a watch would.
const standInPoll = time.Second

// RunOuroboros starts, until the test ends, the stand-ins of Cozystack's
// operators ([CozyOperator] on the management cluster, [TenantAppOperator]
// for a tenant's addon when tenant is true) and of o's controller
// ([OuroborosController], resync [OuroborosResync]) on the cluster, and
// fills in the images the node runs for o's Deployments: our proxy's,
// and the client image for the controller's waiting Pod.
func (e *Env) RunOuroboros(t *testing.T, o *Ouroboros, tenant bool) (*OuroborosController, error) {
	t.Helper()
	refs, err := e.chartImages(t)
	if err != nil {
		return nil, err
	}
	o.ProxyImage, o.ControllerImage = refs[0], ClientImage
	dc, err := dynamic.NewForConfig(e.CP.Config)
	if err != nil {
		return nil, fmt.Errorf("ouroboros: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var op interface{ Run(context.Context) } = &CozyOperator{DC: dc, CS: e.CP.Clientset, O: o, Poll: standInPoll}
	if tenant {
		op = &TenantAppOperator{DC: dc, CS: e.CP.Clientset, O: o, Poll: standInPoll}
	}
	c := &OuroborosController{O: o, CS: e.CP.Clientset, Resync: OuroborosResync, Poll: standInPoll}
	done := make(chan struct{}, 2)
	go func() { op.Run(ctx); done <- struct{}{} }()
	go func() { c.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return c, nil
}
