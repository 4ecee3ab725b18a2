package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeRun runs one container instance's probes, as kubelet's prober
// workers: the startup probe until it succeeds, then readiness and
// liveness. Results set the container's started and ready flags; a failed
// startup or liveness probe restarts the container. As kubelet does, the
// startup and liveness probes stop when the Pod terminates, and the
// readiness probe goes on until the container exits: a Pod in its lame
// duck is taken out of its Services' endpoints by its failing readiness.
type probeRun struct {
	c           *container
	proc        *process
	ctx         context.Context // startup and liveness: ends with the Pod
	cancel      context.CancelFunc
	readyCtx    context.Context // readiness: ends with the container
	readyCancel context.CancelFunc
	wg          sync.WaitGroup
}

// restart is a request to restart the container, with its reason. The
// failed probe travels with it (nil for a postStart hook's), for its
// terminationGracePeriodSeconds: the postStart hook may ask at the same
// moment, so the probe must not be a field the two share.
type restart struct {
	reason string
	probe  *corev1.Probe
}

func newProbeRun(c *container, proc *process) *probeRun {
	ctx, cancel := context.WithCancel(c.p.ctx)
	readyCtx, readyCancel := context.WithCancel(context.Background())
	return &probeRun{c: c, proc: proc, ctx: ctx, cancel: cancel, readyCtx: readyCtx, readyCancel: readyCancel}
}

// stop ends every probe; the container has exited.
func (r *probeRun) stop() {
	r.cancel()
	r.readyCancel()
	r.wg.Wait()
}

// start runs the probes in their own goroutine, counted before it starts
// so that a stop right after (a process that exits at once) waits for it.
func (r *probeRun) start() {
	r.wg.Add(1)
	go r.run()
}

func (r *probeRun) run() {
	defer r.wg.Done()
	spec := r.c.spec
	if spec.StartupProbe != nil {
		if !r.loop(r.ctx, spec.StartupProbe, "Startup", func(ok bool) bool {
			if ok {
				r.c.setFlags(true, false)
			}
			return !ok // until the first success
		}) {
			return
		}
	} else {
		r.c.setFlags(true, false)
	}
	if r.c.isInit {
		return
	}
	if spec.ReadinessProbe == nil {
		r.c.setFlags(true, true)
	} else {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.loop(r.readyCtx, spec.ReadinessProbe, "Readiness", func(ok bool) bool {
				r.c.setFlags(true, ok)
				return true
			})
		}()
	}
	if spec.LivenessProbe != nil {
		r.loop(r.ctx, spec.LivenessProbe, "Liveness", func(bool) bool { return true })
	}
}

// loop probes every periodSeconds after initialDelaySeconds (counted from
// the container's start), until ctx ends, and calls result on each change
// of the verdict that the thresholds allow; result returns whether to go
// on. A startup or liveness verdict of failure asks for a restart and ends
// the loop. loop reports whether it ended by result rather than by failure
// or stop.
func (r *probeRun) loop(ctx context.Context, pr *corev1.Probe, kind string, result func(bool) bool) bool {
	period := seconds(pr.PeriodSeconds, 10)
	start := r.proc.startedAt.Add(seconds(pr.InitialDelaySeconds, 0))
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(start)):
	}
	succ, fail := 0, 0
	verdict := -1 // unknown
	for {
		err := r.c.p.n.probe(ctx, r.c, pr)
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			succ, fail = succ+1, 0
		} else {
			succ, fail = 0, fail+1
			r.c.event(corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %v", kind, err)
		}
		switch {
		case succ >= int(threshold(pr.SuccessThreshold)) && verdict != 1:
			verdict = 1
			if !result(true) {
				return true
			}
		case fail >= int(threshold(pr.FailureThreshold)) && verdict != 0:
			verdict = 0
			if kind != "Readiness" {
				select {
				case r.c.kill <- restart{fmt.Sprintf("%s probe failed: %v", kind, err), pr}:
				default:
				}
				return false
			}
			if !result(false) {
				return true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(period):
		}
	}
}

func seconds(v int32, def int32) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

func threshold(v int32) int32 {
	if v <= 0 {
		return 1
	}
	return v
}

// probe runs one probe of c against its Pod, from the node: an HTTP GET or
// a TCP connect to the Pod's IP dialled inside the node's namespace, or a
// command in the container.
func (n *Node) probe(ctx context.Context, c *container, pr *corev1.Probe) error {
	ctx, cancel := context.WithTimeout(ctx, seconds(pr.TimeoutSeconds, 1))
	defer cancel()
	ip := c.p.podIP()
	switch h := pr.ProbeHandler; {
	case h.Exec != nil:
		_, _, code, err := n.run(ctx, c, h.Exec.Command, nil)
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("command %q exited with %d", h.Exec.Command, code)
		}
		return nil
	case h.TCPSocket != nil:
		port, err := resolvePort(h.TCPSocket.Port, &c.spec)
		if err != nil {
			return err
		}
		conn, err := n.cfg.NodeNS.DialContext(ctx, "tcp", net.JoinHostPort(firstNonEmpty(h.TCPSocket.Host, ip.String()), strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	case h.HTTPGet != nil:
		return n.httpProbe(ctx, h.HTTPGet, &c.spec, ip.String())
	case h.GRPC != nil:
		return n.grpcProbe(ctx, h.GRPC, ip.String())
	}
	return fmt.Errorf("probe has no handler")
}

func (n *Node) httpProbe(ctx context.Context, g *corev1.HTTPGetAction, c *corev1.Container, ip string) error {
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return err
	}
	scheme := "http"
	if g.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(firstNonEmpty(g.Host, ip), strconv.Itoa(port)), Path: g.Path}
	if u.Path == "" {
		u.Path = "/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "kube-probe/"+KubeletVersion[1:])
	for _, h := range g.HTTPHeaders {
		if h.Name == "Host" {
			req.Host = h.Value
		}
		req.Header.Add(h.Name, h.Value)
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext:       n.cfg.NodeNS.DialContext,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet does not verify probe targets
		DisableKeepAlives: true,
	}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	}
	return nil
}

// resolvePort is a probe's port: a number, or the name of a containerPort.
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("couldn't find port %q in container %s", p.StrVal, c.Name)
}

// setFlags sets the container's started and ready flags.
func (c *container) setFlags(started, ready bool) {
	c.mu.Lock()
	changed := c.started != started || c.ready != ready
	c.started, c.ready = started, ready
	c.mu.Unlock()
	if changed {
		c.p.markChanged()
	}
}
