package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// container is one container of a Pod across its restarts.
type container struct {
	p      *pod
	spec   corev1.Container
	isInit bool

	mu       sync.Mutex
	state    corev1.ContainerState
	last     corev1.ContainerState
	restarts int32
	runs     int // instances started, for their directories and IDs
	started  bool
	ready    bool
	id       string
	imageID  string
	proc     *process
	logPath  string
	prevLog  string
	kill     chan restart // a failed probe or postStart hook asks for a restart

	// recent is the latest instance's process, kept after it has ended:
	// an attach that comes after a quick command's end still gets its
	// output.
	recent *process
}

func newContainer(p *pod, spec corev1.Container, isInit bool) *container {
	return &container{
		p:      p,
		spec:   spec,
		isInit: isInit,
		state:  corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		kill:   make(chan restart, 1),
	}
}

// run keeps a regular container going per the Pod's restartPolicy until
// it stopped for good or the Pod is stopped.
func (c *container) run() {
	for attempt := 0; ; attempt++ {
		exit, ran := c.runOnce()
		if c.p.ctx.Err() != nil {
			return
		}
		if ran && !c.restartAfter(exit) {
			return
		}
		if !c.wait(attempt, ran) {
			return
		}
	}
}

// runToCompletion runs an init container until it exits 0; false if it
// failed under restartPolicy Never or the Pod was stopped.
func (c *container) runToCompletion() bool {
	for attempt := 0; ; attempt++ {
		exit, ran := c.runOnce()
		if c.p.ctx.Err() != nil {
			return false
		}
		if ran && exit == 0 {
			return true
		}
		if ran && c.p.object().Spec.RestartPolicy == corev1.RestartPolicyNever {
			return false
		}
		if !c.wait(attempt, ran) {
			return false
		}
	}
}

func (c *container) restartAfter(exit int32) bool {
	switch c.p.object().Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exit != 0
	}
	return true
}

// wait is the back-off before the next attempt: CrashLoopBackOff after a
// run, ImagePullBackOff (or the config error) when it could not start. The
// first restart is immediate, as in kubelet.
func (c *container) wait(attempt int, ran bool) bool {
	d := backoff(c.p.n.cfg.RestartBackoff, attempt-1, 5*time.Minute)
	if attempt == 0 && ran {
		d = 0
	}
	if ran {
		c.mu.Lock()
		c.retire()
		c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason:  "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", d, c.spec.Name, c.p.object().Name),
		}}
		c.mu.Unlock()
		c.p.markChanged()
		if d > 0 {
			c.event(corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.spec.Name, c.p.object().Name)
		}
	} else {
		c.mu.Lock()
		if w := c.state.Waiting; w != nil && w.Reason == "ErrImagePull" {
			w.Reason = "ImagePullBackOff"
		}
		c.mu.Unlock()
		c.p.markChanged()
	}
	select {
	case <-c.p.ctx.Done():
		return false
	case <-time.After(d):
	}
	if ran {
		c.mu.Lock()
		c.restarts++
		c.mu.Unlock()
	}
	return true
}

// runOnce starts one instance and waits for its end; ran is false when it
// could not be created (image, configuration), with the waiting reason set.
func (c *container) runOnce() (exit int32, ran bool) {
	select {
	case <-c.kill: // a verdict on the previous instance
	default:
	}
	inst, err := c.p.n.prepare(c)
	if err != nil {
		reason, msg := waitingReason(err)
		c.setWaiting(reason, msg)
		c.event(corev1.EventTypeWarning, "Failed", "Error: %s", msg)
		return 0, false
	}
	proc, err := startProcess(inst, c.p.n.cfg.NodeNS.Cgroup)
	if err != nil {
		c.setTerminated(inst, nil, 128, "StartError", err.Error())
		c.event(corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return 128, true
	}
	c.setRunning(inst, proc)
	c.event(corev1.EventTypeNormal, "Started", "Started container %s", c.spec.Name)
	probes := newProbeRun(c, proc)
	probes.start()
	hookCtx, hookCancel := context.WithCancel(context.Background())
	hookDone := make(chan struct{})
	go func() {
		defer close(hookDone)
		c.postStart(hookCtx)
	}()
	reason := ""
	select {
	case <-proc.done:
	case <-c.p.ctx.Done():
		c.event(corev1.EventTypeNormal, "Killing", "Stopping container %s", c.spec.Name)
		c.stop(proc, c.p.stopGrace())
	case req := <-c.kill:
		reason = req.reason
		c.event(corev1.EventTypeNormal, "Killing", "Container %s %s, will be restarted", c.spec.Name, reason)
		c.stop(proc, c.p.n.probeGrace(c.p.object(), req.probe))
	}
	<-proc.done
	hookCancel()
	<-hookDone
	probes.stop()
	r := "Completed"
	if proc.exit != 0 {
		r = "Error"
	}
	c.setTerminated(inst, proc, proc.exit, r, reason)
	return proc.exit, true
}

func (c *container) setWaiting(reason, msg string) {
	c.mu.Lock()
	c.retire()
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	c.mu.Unlock()
	c.p.markChanged()
}

// setWaitingIfNew sets the waiting reason of a container that never ran.
func (c *container) setWaitingIfNew(reason, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == 0 {
		c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	}
}

func (c *container) setRunning(inst *instance, proc *process) {
	c.mu.Lock()
	c.retire()
	c.proc, c.recent = proc, proc
	c.prevLog, c.logPath = c.logPath, inst.logPath
	c.id, c.imageID = inst.id, inst.imageID
	c.started, c.ready = false, false
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(proc.startedAt)}}
	c.mu.Unlock()
	c.p.markChanged()
}

func (c *container) setTerminated(inst *instance, proc *process, exit int32, reason, msg string) {
	t := &corev1.ContainerStateTerminated{ExitCode: exit, Reason: reason, Message: msg, ContainerID: containerIDPrefix + inst.id, FinishedAt: metav1.Now()}
	if proc != nil {
		t.StartedAt = metav1.NewTime(proc.startedAt)
		t.FinishedAt = metav1.NewTime(proc.finishedAt)
		if m := inst.terminationMessage(&c.spec, exit); m != "" && msg == "" {
			t.Message = m
		}
	} else {
		c.mu.Lock()
		c.prevLog, c.logPath = c.logPath, inst.logPath
		c.id, c.imageID = inst.id, inst.imageID
		c.recent = nil
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.proc = nil
	c.started, c.ready = false, false
	c.state = corev1.ContainerState{Terminated: t}
	c.mu.Unlock()
	c.p.markChanged()
}

// running returns the current process, or nil.
func (c *container) running() *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc
}

// retire keeps a terminated state as the last state before the state
// moves on. Call with c.mu held.
func (c *container) retire() {
	if c.state.Terminated != nil {
		c.last = c.state
	}
}

// event records an Event about the container's Pod, as kubelet does.
func (c *container) event(typ, reason, format string, args ...any) {
	obj := c.p.object()
	ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID,
		FieldPath: fmt.Sprintf("spec.containers{%s}", c.spec.Name)}
	if c.isInit {
		ref.FieldPath = fmt.Sprintf("spec.initContainers{%s}", c.spec.Name)
	}
	c.p.n.events.recorder.Eventf(ref, typ, reason, format, args...)
}
