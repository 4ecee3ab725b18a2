package node

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pod is one Pod running on the node: its sandbox (network namespace,
// files, volumes) and its containers. Its run goroutine is kubelet's pod
// worker: set up, init containers one by one, containers, tear down.
type pod struct {
	n   *Node
	key string // namespace/name
	dir string // Config.Dir/pods/UID

	mu         sync.Mutex
	obj        *corev1.Pod // spec and metadata as last seen
	net        *podNetwork
	startTime  metav1.Time
	sandbox    bool // network and volumes are ready
	initDone   bool
	tokens     map[string]*token
	conditions map[corev1.PodConditionType]corev1.PodCondition
	inits      []*container
	containers []*container

	ctx      context.Context // ends when the Pod is to stop
	cancel   context.CancelFunc
	grace    time.Duration // for the stop, set before cancel
	deleting bool          // the API object goes once everything stopped
	changed  chan struct{} // the status changed: report it
	volumes  chan struct{} // a volume's source changed: rewrite
	done     chan struct{} // closed when everything is gone
}

func newPod(n *Node, obj *corev1.Pod) *pod {
	p := &pod{
		n:          n,
		key:        obj.Namespace + "/" + obj.Name,
		dir:        filepath.Join(n.cfg.Dir, "pods", string(obj.UID)),
		obj:        obj,
		startTime:  metav1.Now(),
		tokens:     map[string]*token{},
		conditions: map[corev1.PodConditionType]corev1.PodCondition{},
		changed:    make(chan struct{}, 1),
		volumes:    make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for i := range obj.Spec.InitContainers {
		p.inits = append(p.inits, newContainer(p, obj.Spec.InitContainers[i], true))
	}
	for i := range obj.Spec.Containers {
		p.containers = append(p.containers, newContainer(p, obj.Spec.Containers[i], false))
	}
	return p
}

func (p *pod) object() *corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.obj
}

func (p *pod) namespace() string { return p.object().Namespace }

// podIP is the Pod's address once its network is up.
func (p *pod) podIP() netip.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.net == nil {
		return netip.Addr{}
	}
	return p.net.ip
}

// run is the Pod's life on this node.
func (p *pod) run() {
	reported := make(chan struct{})
	go p.reporter(reported)
	if p.setUp() && p.runInits() {
		p.runContainers()
	}
	p.tearDownNetwork()
	p.report()
	p.end(reported)
}

// end waits for the Pod's stop (a Pod that completed stays, with its
// logs, until deleted), removes its files, and deletes its API object if
// a deletion stopped it.
func (p *pod) end(reported <-chan struct{}) {
	<-p.ctx.Done()
	if err := os.RemoveAll(p.dir); err != nil {
		p.n.cfg.logf("pod %s: %v", p.key, err)
	}
	close(p.done)
	<-reported
	p.n.forget(p)
	// Under the lock: virtual-kubelet calls DeletePod again on every
	// update of a Pod being deleted, also while this one ends.
	p.mu.Lock()
	deleting := p.deleting
	p.mu.Unlock()
	if deleting {
		p.n.deleteObject(p)
	}
}

// terminate stops the Pod: its containers get SIGTERM, and SIGKILL after
// grace (capped by Config.MaxGracePeriod).
func (p *pod) terminate(grace time.Duration) {
	if grace > p.n.cfg.MaxGracePeriod {
		grace = p.n.cfg.MaxGracePeriod
	}
	p.mu.Lock()
	if p.ctx.Err() == nil {
		p.grace = grace
	}
	p.mu.Unlock()
	p.cancel()
}

// stopGrace is the grace period of the stop under way.
func (p *pod) stopGrace() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.grace
}

// setUp makes the sandbox: network, /etc files, volumes. It retries until
// it succeeds or the Pod is stopped, as kubelet retries a failed sandbox
// or mount, with the reason in the containers' waiting state.
func (p *pod) setUp() bool {
	for attempt := 0; ; attempt++ {
		err := p.setUpOnce()
		if err == nil {
			p.mu.Lock()
			p.sandbox = true
			p.mu.Unlock()
			p.markChanged()
			go p.keepVolumes()
			return true
		}
		p.n.cfg.logf("pod %s: %v", p.key, err)
		p.setWaiting("ContainerCreating", err.Error())
		select {
		case <-p.ctx.Done():
			return false
		case <-p.volumes: // a ConfigMap or Secret it reads has come
		case <-time.After(backoff(time.Second, attempt, 10*time.Second)):
		}
	}
}

func (p *pod) setUpOnce() error {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	if p.podIP() == (netip.Addr{}) {
		if err := p.setUpNetwork(); err != nil {
			return err
		}
	}
	if err := p.writeEtcFiles(); err != nil {
		return err
	}
	return p.setUpVolumes()
}

func (p *pod) setUpNetwork() error {
	obj := p.object()
	if obj.Spec.HostNetwork {
		p.mu.Lock()
		p.net = p.n.hostNetwork()
		p.mu.Unlock()
		return nil
	}
	var pn *podNetwork
	if p.n.cfg.CNI != nil {
		var err error
		if pn, err = p.n.setUpCNINetwork(obj); err != nil {
			return err
		}
	} else {
		ip, err := p.n.ipam.allocate()
		if err != nil {
			return err
		}
		if pn, err = p.n.setUpNetwork(string(obj.UID), ip); err != nil {
			p.n.ipam.release(ip)
			return err
		}
	}
	p.mu.Lock()
	p.net = pn
	p.mu.Unlock()
	return nil
}

// tearDownNetwork removes the Pod's network namespace, which kills what
// still runs in it; the Pod's IP goes back to the pool (or to the CNI
// plugin's IPAM, through its DEL).
func (p *pod) tearDownNetwork() {
	p.mu.Lock()
	pn := p.net
	p.mu.Unlock()
	if pn != nil {
		if err := pn.tearDown(); err != nil {
			p.n.cfg.logf("pod %s: %v", p.key, err)
		}
		if pn.owned && pn.cni == nil {
			p.n.ipam.release(pn.ip)
		}
	}
}

// setWaiting puts every container that has not run yet in a waiting state.
func (p *pod) setWaiting(reason, msg string) {
	for _, c := range p.all() {
		c.setWaitingIfNew(reason, msg)
	}
	p.markChanged()
}

func (p *pod) all() []*container {
	return append(append([]*container{}, p.inits...), p.containers...)
}

// runInits runs the init containers in order, each to success; false if
// one failed for good or the Pod was stopped.
func (p *pod) runInits() bool {
	for _, c := range p.inits {
		if !c.runToCompletion() {
			return false
		}
	}
	p.mu.Lock()
	p.initDone = true
	p.mu.Unlock()
	p.markChanged()
	return true
}

// runContainers runs the containers until each has stopped for good.
func (p *pod) runContainers() {
	var wg sync.WaitGroup
	for _, c := range p.containers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run()
		}()
	}
	wg.Wait()
}

// markChanged asks the reporter to send the status.
func (p *pod) markChanged() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// reporter sends the status whenever it changed, coalescing bursts, until
// the Pod is gone.
func (p *pod) reporter(finished chan<- struct{}) {
	defer close(finished)
	for {
		select {
		case <-p.changed:
			p.report()
		case <-p.done:
			return
		}
	}
}

// report hands the Pod with its current status to virtual-kubelet.
func (p *pod) report() {
	p.n.mu.Lock()
	notify := p.n.notify
	p.n.mu.Unlock()
	if notify != nil {
		notify(p.apiPod())
	}
}

// apiPod is the Pod object with the status this node observes.
func (p *pod) apiPod() *corev1.Pod {
	obj := p.object().DeepCopy()
	obj.Status = p.status()
	return obj
}

// backoff is base doubled per attempt, up to max.
func backoff(base time.Duration, attempt int, max time.Duration) time.Duration {
	d := base
	for range attempt {
		if d *= 2; d >= max {
			return max
		}
	}
	return d
}
