package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/coredns-hairpin/hairpin/test/harness/netns"
)

// Node is a running node agent.
type Node struct {
	cfg    Config
	ipam   *ipam
	images *imageCache
	events *eventSink

	factory    informers.SharedInformerFactory // ConfigMaps, Secrets, Services
	podFactory informers.SharedInformerFactory // the Pods bound to this node
	configMaps corelisters.ConfigMapLister
	secrets    corelisters.SecretLister
	services   corelisters.ServiceLister

	mu     sync.Mutex
	pods   map[string]*pod // by namespace/name
	notify func(*corev1.Pod)

	ctx     context.Context // ends at Stop: the controllers' and pods' parent
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the controllers
	kubelet *http.Server

	stopOnce sync.Once
	stopErr  error
}

// startTimeout bounds the Node's registration and the informers' sync.
const startTimeout = 60 * time.Second

// Start registers the Node (Ready, its InternalIP, podCIDR and capacity)
// and starts running the Pods bound to it. Stop it with [Node.Stop].
func Start(ctx context.Context, cfg Config) (_ *Node, retErr error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n := &Node{
		cfg:    cfg,
		ipam:   newIPAM(cfg.PodCIDR),
		images: newImageCache(cfg),
		pods:   map[string]*pod{},
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	defer func() {
		if retErr != nil {
			_ = n.Stop()
		}
	}()
	n.events = newEventSink(cfg.Client, cfg.NodeName)
	n.factory = informers.NewSharedInformerFactory(cfg.Client, 0)
	n.podFactory = informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0,
		informers.WithTweakListOptions(onNode(cfg.NodeName)))
	n.configMaps = n.factory.Core().V1().ConfigMaps().Lister()
	n.secrets = n.factory.Core().V1().Secrets().Lister()
	n.services = n.factory.Core().V1().Services().Lister()
	if err := n.watchVolumeSources(); err != nil {
		return nil, err
	}

	nc, err := node.NewNodeController(node.NaiveNodeProvider{}, n.nodeObject(), cfg.Client.CoreV1().Nodes(),
		node.WithNodeEnableLeaseV1(cfg.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease), 0),
		node.WithNodeStatusUpdateErrorHandler(n.nodeStatusError))
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	pc, err := node.NewPodController(node.PodControllerConfig{
		PodClient:         cfg.Client.CoreV1(),
		PodInformer:       n.podFactory.Core().V1().Pods(),
		EventRecorder:     n.events.recorder,
		Provider:          &provider{n},
		ConfigMapInformer: n.factory.Core().V1().ConfigMaps(),
		SecretInformer:    n.factory.Core().V1().Secrets(),
		ServiceInformer:   n.factory.Core().V1().Services(),
		// The environment is resolved when a container starts, as kubelet
		// does, once status.podIP is known.
		SkipDownwardAPIResolution: true,
	})
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	vctx := withLogger(n.ctx, cfg.logf)
	n.goRun(func() { _ = nc.Run(vctx) })
	if err := waitReady(ctx, nc.Ready(), nc.Done(), nc.Err); err != nil {
		return nil, fmt.Errorf("node: register %s: %w", cfg.NodeName, err)
	}
	n.factory.Start(n.ctx.Done())
	n.podFactory.Start(n.ctx.Done())
	n.goRun(func() {
		if err := pc.Run(vctx, 4); err != nil {
			cfg.logf("pod controller: %v", err)
		}
	})
	if err := waitReady(ctx, pc.Ready(), pc.Done(), pc.Err); err != nil {
		return nil, fmt.Errorf("node: pod controller: %w", err)
	}
	for typ, ok := range n.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("node: sync %v informer: %w", typ, context.Cause(ctx))
		}
	}
	if cfg.KubeletPort != 0 {
		if err := n.serveKubeletAPI(); err != nil {
			return nil, err
		}
	}
	n.goRun(n.refreshVolumes)
	return n, nil
}

func (n *Node) goRun(fn func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		fn()
	}()
}

// waitReady waits until ready is closed, or fails with what ended the
// controller first.
func waitReady(ctx context.Context, ready, done <-chan struct{}, errf func() error) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	select {
	case <-ready:
		return nil
	case <-done:
		if err := errf(); err != nil {
			return err
		}
		return errors.New("stopped before it was ready")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PodIP returns the IP of a Pod running on this node.
func (n *Node) PodIP(namespace, name string) (netip.Addr, bool) {
	p := n.pod(namespace, name)
	if p == nil {
		return netip.Addr{}, false
	}
	ip := p.podIP()
	return ip, ip.IsValid()
}

// PodNetwork returns the network namespace of a Pod running on this node
// (the node's own for a hostNetwork Pod): a test's sockets there are the
// Pod's, subject to what the dataplane enforces on its veth.
func (n *Node) PodNetwork(namespace, name string) (*netns.NS, bool) {
	p := n.pod(namespace, name)
	if p == nil {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.net == nil {
		return nil, false
	}
	return p.net.ns, true
}

// pod returns the Pod namespace/name, or nil.
func (n *Node) pod(namespace, name string) *pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pods[namespace+"/"+name]
}

// stopGrace is the most a Pod gets at [Node.Stop]: a test's teardown does
// not wait out a client that ignores SIGTERM.
const stopGrace = 5 * time.Second

// Stop stops every Pod's processes (SIGTERM, the grace period, SIGKILL),
// deletes the Pods' network namespaces and veths, stops the controllers and
// removes Dir. The Node and Pod objects stay, as when a kubelet stops. It is
// idempotent.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() {
		var errs []error
		n.cancel()
		if n.kubelet != nil {
			_ = n.kubelet.Close()
		}
		n.wg.Wait()
		n.mu.Lock()
		pods := make([]*pod, 0, len(n.pods))
		for _, p := range n.pods {
			pods = append(pods, p)
		}
		n.mu.Unlock()
		for _, p := range pods {
			p.terminate(min(n.cfg.MaxGracePeriod, stopGrace))
		}
		for _, p := range pods {
			<-p.done
		}
		if n.factory != nil {
			n.factory.Shutdown()
			n.podFactory.Shutdown()
		}
		if n.events != nil {
			n.events.stop()
		}
		if err := os.RemoveAll(n.cfg.Dir); err != nil {
			errs = append(errs, fmt.Errorf("node: remove %s: %w", n.cfg.Dir, err))
		}
		n.stopErr = errors.Join(errs...)
	})
	return n.stopErr
}
