package hairpin

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// apiserverDialer dials the apiserver for the plugin's clients. A Pod
// reaches the apiserver through the kubernetes Service's address, which the
// node's dataplane (kube-proxy, Cilium) translates to the apiserver's own
// address. An apiserver that shuts down takes its endpoint out of that
// Service; once it is back, the dataplane refuses the Service's address
// until its own watch, backing off after the outage, has seen the endpoint
// again, which took a minute on kube-proxy. So when the configured address
// does not answer, the dialer tries the apiserver's own addresses, learned
// from the Service's EndpointSlice while it was up. The TLS server name
// stays the configured host, so the apiserver's certificate is checked as
// before.
type apiserverDialer struct {
	dialer net.Dialer

	mu    sync.Mutex
	addrs []string // "ip:port" of the apiserver's endpoints, the last non-empty set
	via   string   // the address the last fallback dial reached, "" when none (for the log)
}

// Names of the Service in front of the apiserver and of its EndpointSlice,
// and its port, as the apiserver writes them.
const (
	apiserverServiceNamespace = "default"
	apiserverServiceName      = "kubernetes"
	apiserverPortName         = "https"
)

// serviceDialTimeout bounds the dial of the configured address when the
// apiserver's own addresses are known: a Service address that drops
// instead of refusing must not hold the fallback back for client-go's 30 s.
const serviceDialTimeout = time.Second

func newAPIServerDialer() *apiserverDialer {
	return &apiserverDialer{dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}}
}

// DialContext is a rest.Config's Dial.
func (d *apiserverDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	alternatives := d.alternatives(addr)
	first := ctx
	if len(alternatives) > 0 {
		var cancel context.CancelFunc
		first, cancel = context.WithTimeout(ctx, serviceDialTimeout)
		defer cancel()
	}
	conn, err := d.dialer.DialContext(first, network, addr)
	if err == nil || ctx.Err() != nil {
		d.reached(addr, "")
		return conn, err
	}
	for _, alt := range alternatives {
		if c, altErr := d.dialer.DialContext(ctx, network, alt); altErr == nil {
			d.reached(addr, alt)
			return c, nil
		}
	}
	return nil, err
}

// alternatives are the apiserver's own addresses other than addr.
func (d *apiserverDialer) alternatives(addr string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(d.addrs), func(a string) bool { return a == addr })
}

// reached logs the first dial that had to go around addr, and the first
// that no longer had to.
func (d *apiserverDialer) reached(addr, via string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.via == via {
		return
	}
	if via == "" {
		log.Infof("the apiserver answers at %s again", addr)
	} else {
		log.Infof("the apiserver's Service address %s does not answer; dialling the apiserver at %s directly until it does", addr, via)
	}
	d.via = via
}

// learn takes the apiserver's addresses from its Service's EndpointSlice.
// An empty slice is the apiserver shutting down: the last addresses stay.
func (d *apiserverDialer) learn(s *discovery.EndpointSlice) {
	var addrs []string
	var port int32
	for _, p := range s.Ports {
		if p.Port != nil && (p.Name == nil || *p.Name == apiserverPortName) {
			port = *p.Port
		}
	}
	if port == 0 {
		return
	}
	for _, ep := range s.Endpoints {
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
			continue
		}
		for _, a := range ep.Addresses {
			addrs = append(addrs, net.JoinHostPort(a, strconv.Itoa(int(port))))
		}
	}
	if len(addrs) == 0 {
		return
	}
	slices.Sort(addrs)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addrs = addrs
}

// watch keeps the apiserver's addresses up to date until stop is closed.
// Without the right to read that one EndpointSlice (the chart grants it)
// nothing is learned and an outage lasts as long as the dataplane's; this
// is said once.
func (d *apiserverDialer) watch(kube kubernetes.Interface, stop <-chan struct{}) {
	byName := fields.OneTermEqualSelector("metadata.name", apiserverServiceName).String()
	lw := cache.NewFilteredListWatchFromClient(kube.DiscoveryV1().RESTClient(), "endpointslices", apiserverServiceNamespace,
		func(o *meta.ListOptions) { o.FieldSelector = byName })
	informer := cache.NewSharedIndexInformer(lw, &discovery.EndpointSlice{}, 0, cache.Indexers{})
	learn := func(obj any) {
		if s, ok := obj.(*discovery.EndpointSlice); ok {
			d.learn(s)
		}
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    learn,
		UpdateFunc: func(_, obj any) { learn(obj) },
	})
	var once sync.Once
	_ = informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		// An outage is what this watch is for; only a refusal is news.
		if reason := errorReason(err); reason == "forbidden" || reason == "unauthorized" {
			once.Do(func() {
				log.Warningf("cannot watch the apiserver's own addresses (EndpointSlice %s/%s: %s); after an apiserver outage the plugin waits for the node's dataplane to serve the Service again", apiserverServiceNamespace, apiserverServiceName, reason)
			})
		}
	})
	informer.Run(stop)
}
