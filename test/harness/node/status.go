package node

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// status is the Pod's status as kubelet's status manager would write it:
// phase, conditions, IPs and the containers' states.
func (p *pod) status() corev1.PodStatus {
	obj := p.object()
	p.mu.Lock()
	sandbox, initDone, pn, start := p.sandbox, p.initDone, p.net, p.startTime
	p.mu.Unlock()
	st := corev1.PodStatus{
		HostIP:    p.n.cfg.NodeIP.String(),
		HostIPs:   []corev1.HostIP{{IP: p.n.cfg.NodeIP.String()}},
		StartTime: &start,
		QOSClass:  obj.Status.QOSClass,
	}
	if pn != nil {
		st.PodIP = pn.ip.String()
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	}
	for _, c := range p.inits {
		st.InitContainerStatuses = append(st.InitContainerStatuses, c.status())
	}
	allReady := len(p.containers) > 0
	for _, c := range p.containers {
		cs := c.status()
		allReady = allReady && cs.Ready
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	st.Phase = phase(obj, initDone, st.InitContainerStatuses, st.ContainerStatuses, p.ctx.Err() != nil)
	running := st.Phase == corev1.PodRunning
	initialized := initDone || len(p.inits) == 0
	st.Conditions = []corev1.PodCondition{
		p.condition(corev1.PodReadyToStartContainers, sandbox && (running || st.Phase == corev1.PodPending), ""),
		p.condition(corev1.PodInitialized, initialized, "ContainersNotInitialized"),
		p.condition(corev1.PodReady, allReady && running, "ContainersNotReady"),
		p.condition(corev1.ContainersReady, allReady && running, "ContainersNotReady"),
		p.condition(corev1.PodScheduled, true, ""),
	}
	return st
}

// condition returns the condition with its last transition time kept
// while its status stays.
func (p *pod) condition(t corev1.PodConditionType, ok bool, reason string) corev1.PodCondition {
	s := corev1.ConditionFalse
	if ok {
		s, reason = corev1.ConditionTrue, ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c, seen := p.conditions[t]
	if !seen || c.Status != s {
		c = corev1.PodCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: metav1.Now()}
		p.conditions[t] = c
	}
	return c
}

// phase follows kubelet's getPhase: Pending until the init containers are
// done and every container has run; Running while one runs or will be
// restarted; Succeeded or Failed once all have stopped for good.
func phase(obj *corev1.Pod, initDone bool, inits, cs []corev1.ContainerStatus, stopping bool) corev1.PodPhase {
	for _, s := range inits {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 && obj.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
	}
	if !initDone && len(inits) > 0 && !stopping {
		return corev1.PodPending
	}
	var running, waiting, stopped, succeeded, failed int
	for _, s := range cs {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			} else {
				failed++
			}
		case s.State.Waiting != nil:
			if s.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		}
	}
	switch {
	case stopping && running == 0:
		if failed > 0 || waiting > 0 {
			return corev1.PodFailed
		}
		return corev1.PodSucceeded
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0 && obj.Spec.RestartPolicy == corev1.RestartPolicyAlways:
		return corev1.PodRunning
	case stopped > 0 && obj.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && stopped != succeeded:
		return corev1.PodRunning
	case stopped > 0 && failed == 0:
		return corev1.PodSucceeded
	case stopped > 0:
		return corev1.PodFailed
	}
	return corev1.PodPending
}

// status is the container's status.
func (c *container) status() corev1.ContainerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	started := c.started
	cs := corev1.ContainerStatus{
		Name:                 c.spec.Name,
		Image:                c.spec.Image,
		ImageID:              c.imageID,
		State:                *c.state.DeepCopy(),
		LastTerminationState: *c.last.DeepCopy(),
		Ready:                c.ready && c.state.Running != nil,
		RestartCount:         c.restarts,
		Started:              &started,
	}
	if c.id != "" {
		cs.ContainerID = containerIDPrefix + c.id
	}
	if c.isInit && c.state.Terminated != nil && c.state.Terminated.ExitCode == 0 {
		cs.Ready = true
	}
	return cs
}
