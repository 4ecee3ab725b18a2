package dataplane

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// OuroborosResync is the controller's resync in ouroboros's chart
// (values.yaml controller.resync: 30s, passed as --resync): at least this
// often it writes its lines again, whoever took them out.
const OuroborosResync = 30 * time.Second

// OuroborosController stands in for ouroboros's controller process: it
// runs while its Deployment does (the Deployment exists with replicas
// above 0: the chart renders it while controller.enabled is true, and
// scaling it to 0 ends its Pod), and while it runs it writes the rewrite
// lines of every Ingress host at once and again every Resync, as the
// real reconciler does on start and on each informer resync (a reconcile
// that finds them in place changes nothing).
type OuroborosController struct {
	O  *Ouroboros
	CS kubernetes.Interface
	// Resync is how often it writes again; Poll how often it looks at
	// its Deployment (a Pod starts or ends within that).
	Resync, Poll time.Duration

	writes, rewrites atomic.Int64
}

// Run runs the controller until ctx ends.
func (c *OuroborosController) Run(ctx context.Context) {
	var last time.Time
	t := time.NewTicker(c.Poll)
	defer t.Stop()
	for {
		if running, err := c.Running(ctx); err == nil && running {
			if last.IsZero() || time.Since(last) >= c.Resync {
				c.reconcile(ctx)
				last = time.Now()
			}
		} else {
			last = time.Time{} // a new Pod reconciles at its start
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Running reports whether the controller's Deployment runs a Pod.
func (c *OuroborosController) Running(ctx context.Context) (bool, error) {
	d, err := c.CS.AppsV1().Deployments(c.O.Namespace).Get(ctx, c.O.ControllerName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return d.DeletionTimestamp == nil && (d.Spec.Replicas == nil || *d.Spec.Replicas > 0), nil
}

func (c *OuroborosController) reconcile(ctx context.Context) {
	hosts, err := IngressHosts(ctx, c.CS)
	if err != nil {
		return
	}
	c.writes.Add(1)
	if changed, err := c.O.WriteLines(ctx, c.CS, hosts); err == nil && changed {
		c.rewrites.Add(1)
	}
}

// Reconciles is how many times it has written its lines (changed or
// not); Rewrites how many of those changed the ConfigMap.
func (c *OuroborosController) Reconciles() int64 { return c.writes.Load() }

// Rewrites is how many reconciles changed the ConfigMap: put the lines
// (back) in.
func (c *OuroborosController) Rewrites() int64 { return c.rewrites.Load() }

// LinesStayOut returns an error when the lines are in CoreDNS's
// ConfigMap after resync has passed since they were taken out at
// removed: a controller still running has written them back by then
// (a migration that forgot to stop it), and its lines would outlive its
// proxy.
func (o *Ouroboros) LinesStayOut(ctx context.Context, cs kubernetes.Interface, removed time.Time, resync time.Duration) error {
	// A reconcile that started before the removal may still write.
	wait := time.Until(removed.Add(resync + resync/2))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(wait):
	}
	back, err := o.HasLines(ctx, cs)
	if err != nil {
		return err
	}
	if back {
		return fmt.Errorf("ouroboros's lines are back in kube-system/%s %s after they were taken out: its controller still runs", o.configMap(), time.Since(removed).Round(time.Second))
	}
	return nil
}
