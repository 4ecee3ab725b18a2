package kubectlhairpin

import (
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	appsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	discoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	networkingv1 "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/rest"
	gwv1 "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"
)

// Clients are what Gather reads the cluster with.
type Clients struct {
	Kube    KubeClient
	Gateway GatewayClient
	Dynamic dynamic.Interface
	Metrics MetricsSource
}

// KubeClient is the part of client-go's clientset that Gather reads with:
// the groups it lists, and discovery. A clientset (a fake one in tests) is
// one; NewClients builds one of the groups' own clients, so that the
// command does not link the typed clients of every other group.
type KubeClient interface {
	CoreV1() corev1.CoreV1Interface
	AppsV1() appsv1.AppsV1Interface
	DiscoveryV1() discoveryv1.DiscoveryV1Interface
	NetworkingV1() networkingv1.NetworkingV1Interface
	Discovery() discovery.DiscoveryInterfaces
}

// GatewayClient is the part of the Gateway API clientset that Gather reads
// with.
type GatewayClient interface {
	GatewayV1() gwv1.GatewayV1Interface
}

// groupClients is a KubeClient of one client per group.
type groupClients struct {
	core       *corev1.CoreV1Client
	apps       *appsv1.AppsV1Client
	discovery  *discovery.DiscoveryClient
	discovery1 *discoveryv1.DiscoveryV1Client
	networking *networkingv1.NetworkingV1Client
}

// CoreV1 implements KubeClient.
func (c *groupClients) CoreV1() corev1.CoreV1Interface { return c.core }

// AppsV1 implements KubeClient.
func (c *groupClients) AppsV1() appsv1.AppsV1Interface { return c.apps }

// DiscoveryV1 implements KubeClient.
func (c *groupClients) DiscoveryV1() discoveryv1.DiscoveryV1Interface { return c.discovery1 }

// NetworkingV1 implements KubeClient.
func (c *groupClients) NetworkingV1() networkingv1.NetworkingV1Interface { return c.networking }

// Discovery implements KubeClient.
func (c *groupClients) Discovery() discovery.DiscoveryInterfaces { return c.discovery }

// gatewayClients is a GatewayClient of the v1 group's own client.
type gatewayClients struct{ v1 *gwv1.GatewayV1Client }

// GatewayV1 implements GatewayClient.
func (c gatewayClients) GatewayV1() gwv1.GatewayV1Interface { return c.v1 }

// NewClients returns clients for cfg that read metrics through the pod
// proxy.
func NewClients(cfg *rest.Config) (Clients, error) {
	var kube groupClients
	var err error
	if kube.core, err = corev1.NewForConfig(cfg); err == nil {
		if kube.apps, err = appsv1.NewForConfig(cfg); err == nil {
			if kube.discovery1, err = discoveryv1.NewForConfig(cfg); err == nil {
				if kube.networking, err = networkingv1.NewForConfig(cfg); err == nil {
					kube.discovery, err = discovery.NewDiscoveryClientForConfig(cfg)
				}
			}
		}
	}
	if err != nil {
		return Clients{}, fmt.Errorf("kubernetes client: %w", err)
	}
	gwc, err := gwv1.NewForConfig(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("gateway API client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("dynamic client: %w", err)
	}
	return Clients{Kube: &kube, Gateway: gatewayClients{v1: gwc}, Dynamic: dyn, Metrics: PodProxy{Client: kube.core}}, nil
}
