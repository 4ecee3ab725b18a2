package hairpin

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/coredns/coredns/coremain"

	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
)

// restConfig returns the API client configuration: the kubeconfig file (and
// context) when one is given, the in-cluster service account otherwise.
// Protobuf is asked for, as the kubernetes plugin does: it is smaller to
// decode than JSON for built-in kinds.
func restConfig(s settings) (*rest.Config, error) {
	var (
		cfg *rest.Config
		err error
	)
	path := s.kubeconfig
	if path == "" {
		// A bare (or image-activated) hairpin follows $KUBECONFIG when it
		// is set, as kubectl does, and the in-cluster account otherwise.
		path = os.Getenv("KUBECONFIG")
	}
	if path == "" {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster client config (set kubeconfig PATH, or KUBECONFIG, to run outside a cluster): %w", err)
		}
	} else {
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
		overrides := &clientcmd.ConfigOverrides{CurrentContext: s.kubecontext}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %q: %w", path, err)
		}
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.UserAgent = fmt.Sprintf("%s-hairpin/%s (%s/%s)", coremain.CoreName, coremain.CoreVersion, runtime.GOOS, runtime.GOARCH)
	return cfg, nil
}

// clientFactory validates the client configuration now, so that a bad
// kubeconfig stops startup, and returns a constructor for the client that
// OnStartup calls when a new cache is needed.
func clientFactory(s settings) (func() (*clients, error), error) {
	cfg, err := restConfig(s)
	if err != nil {
		return nil, err
	}
	return func() (*clients, error) {
		// Lists and watches retry a refusal or an unreachable apiserver
		// themselves (retryTransport); discovery, below, does not.
		retry := newRetries()
		// Every client dials through the dialer that goes around a
		// Service address the dataplane refuses after an outage.
		dial := newAPIServerDialer()
		dialCfg := rest.CopyConfig(cfg)
		dialCfg.Dial = dial.DialContext
		// The watch of the apiserver's own addresses backs off as
		// client-go does: it is needed only before an outage.
		apiserverKube, err := kubernetes.NewForConfig(dialCfg)
		if err != nil {
			return nil, fmt.Errorf("kubernetes client: %w", err)
		}
		watchCfg := rest.CopyConfig(dialCfg)
		watchCfg.Wrap(retry.wrap)
		kube, err := kubernetes.NewForConfig(watchCfg)
		if err != nil {
			return nil, fmt.Errorf("kubernetes client: %w", err)
		}
		// Custom resources have no protobuf encoding.
		jsonCfg := rest.CopyConfig(dialCfg)
		jsonCfg.ContentType = "application/json"
		jsonCfg.AcceptContentTypes = "application/json"
		gatewayCfg := rest.CopyConfig(jsonCfg)
		gatewayCfg.Wrap(retry.wrap)
		gateway, err := gwclient.NewForConfig(gatewayCfg)
		if err != nil {
			return nil, fmt.Errorf("gateway API client: %w", err)
		}
		// Discovery runs in OnStartup and must not hang it on an apiserver
		// that accepts connections but does not answer; watches, which
		// are long requests, keep the timeout-less config.
		discoCfg := rest.CopyConfig(jsonCfg)
		discoCfg.Timeout = discoveryTimeout
		disco, err := discovery.NewDiscoveryClientForConfig(discoCfg)
		if err != nil {
			return nil, fmt.Errorf("discovery client: %w", err)
		}
		return &clients{kube: kube, gateway: gateway, discovery: disco, retry: retry, apiserver: dial, apiserverKube: apiserverKube}, nil
	}, nil
}

// discoveryTimeout bounds one discovery request.
const discoveryTimeout = 10 * time.Second

// clients are the API clients a cache watches with.
type clients struct {
	kube      kubernetes.Interface
	gateway   gwclient.Interface
	discovery resourceDiscoverer
	// retry is what the lists and watches of kube and gateway retry with;
	// nil for fake clients.
	retry *retries
	// apiserver dials the apiserver for every client, and learns its own
	// addresses through apiserverKube; nil for fake clients.
	apiserver     *apiserverDialer
	apiserverKube kubernetes.Interface
}

// watchAPIServer keeps the apiserver's own addresses up to date for the
// dialer until stop is closed.
func (c *clients) watchAPIServer(stop <-chan struct{}) {
	if c != nil && c.apiserver != nil {
		c.apiserver.watch(c.apiserverKube, stop)
	}
}

// reportRetries sends the failures the retry transport retries to report.
func (c *clients) reportRetries(report func(resource, namespace string, err error)) {
	if c != nil && c.retry != nil {
		c.retry.setReport(report)
	}
}

// wakeRetries makes every waiting retry try again now.
func (c *clients) wakeRetries() {
	if c != nil && c.retry != nil {
		c.retry.wake()
	}
}

// resourceDiscoverer is the part of discovery that finds which Gateway API
// kinds the cluster serves.
type resourceDiscoverer interface {
	ServerResourcesForGroupVersion(groupVersion string) (*meta.APIResourceList, error)
}

// newClientFactory is clientFactory; tests replace it with fake clients.
var newClientFactory = clientFactory
