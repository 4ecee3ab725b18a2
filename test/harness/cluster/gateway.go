package cluster

import (
	"context"
	_ "embed"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
	"sigs.k8s.io/yaml"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// GatewayControllerName is NGINX Gateway Fabric's controllerName: a
// GatewayClass naming it is served by [GatewayController].
const GatewayControllerName = "gateway.nginx.org/nginx-gateway-controller"

// NginxProxyGVR is NGF's NginxProxy resource, which [GatewayController]
// reads for rewriteClientIP.
var NginxProxyGVR = schema.GroupVersionResource{Group: "gateway.nginx.org", Version: "v1alpha2", Resource: "nginxproxies"}

// GatewayServiceName is the name NGF 2.x gives the data plane of a Gateway
// (its Deployment and LoadBalancer Service, in the Gateway's namespace): the
// Gateway's name, a dash, its GatewayClass's name.
func GatewayServiceName(gateway, class string) string { return gateway + "-" + class }

//go:embed crds/nginxproxies.yaml
var nginxProxyCRD []byte

// GatewayController is a Gateway API controller run the way NGINX Gateway
// Fabric runs its data plane, for every GatewayClass whose controllerName
// is [GatewayControllerName]. Per Gateway it renders nginx.conf from the
// Gateway and its HTTPRoutes into a ConfigMap (an HTTP server per listener
// port; proxy_protocol on every listen when the NginxProxy of the Gateway,
// else of its class, says rewriteClientIP.mode: ProxyProtocol; a server per
// hostname, from the listener and route hostnames), and runs it in a
// Deployment behind a LoadBalancer Service, both named
// [GatewayServiceName] and owned by the Gateway (garbage-collected with
// it), the Service annotated with the Gateway's
// spec.infrastructure.annotations. It writes the GatewayClass, Gateway
// (addresses, Accepted, Programmed, listeners) and HTTPRoute (parents)
// statuses, and re-renders on every change of those objects; the Pod's
// agent reloads nginx when the mounted file changes, as NGF's agent does
// when the control plane pushes a new configuration. Each server answers
// "ok host=$host client=$remote_addr gateway=NAMESPACE/NAME" and logs as
// [harness.NginxLogFormat].
//
// It runs in the test process, like the load balancer. Only HTTP listeners
// are served.
type GatewayController struct {
	c    *Cluster
	gw   gwclient.Interface
	dyn  dynamic.Interface
	crds []*apiextensionsv1.CustomResourceDefinition

	lists controllerLists
	wake  chan struct{}
	stop  context.CancelFunc
	done  chan struct{}

	// afterWrite is nil but in this package's tests, which pause in it to
	// stand for a loaded machine: program's writes of one data plane can
	// be seconds apart, and a test must not read one object as though the
	// others came with it.
	afterWrite func(kind, namespace, name string)
}

// StartGatewayController installs NGF's NginxProxy CRD and starts the
// controller; [GatewayController.Stop] stops it and removes the CRD.
func (c *Cluster) StartGatewayController(t testing.TB) (*GatewayController, error) {
	return c.startGatewayController(t, nil)
}

// startGatewayController takes the afterWrite hook here: set once the
// controller runs, it would race with its first sync.
func (c *Cluster) startGatewayController(t testing.TB, afterWrite func(kind, namespace, name string)) (*GatewayController, error) {
	gc := &GatewayController{c: c, wake: make(chan struct{}, 1), done: make(chan struct{}), afterWrite: afterWrite}
	var err error
	if gc.gw, err = gwclient.NewForConfig(c.CP.Config); err != nil {
		return nil, fmt.Errorf("cluster: gateway controller: %w", err)
	}
	if gc.dyn, err = dynamic.NewForConfig(c.CP.Config); err != nil {
		return nil, fmt.Errorf("cluster: gateway controller: %w", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(nginxProxyCRD, crd); err != nil {
		return nil, fmt.Errorf("cluster: the NginxProxy CRD: %w", err)
	}
	if gc.crds, err = envtest.InstallCRDs(c.CP.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}, MaxTime: 30 * time.Second}); err != nil {
		return nil, fmt.Errorf("cluster: install the NginxProxy CRD: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gc.stop = cancel
	kick := func(any) {
		select {
		case gc.wake <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: kick, DeleteFunc: kick, UpdateFunc: func(_, o any) { kick(o) }}
	gwf := gwinformers.NewSharedInformerFactory(gc.gw, 0)
	kf := informers.NewSharedInformerFactory(c.CP.Clientset, 0)
	df := dynamicinformer.NewDynamicSharedInformerFactory(gc.dyn, 0)
	gc.lists = controllerLists{
		classes:     gwf.Gateway().V1().GatewayClasses().Lister(),
		gateways:    gwf.Gateway().V1().Gateways().Lister(),
		routes:      gwf.Gateway().V1().HTTPRoutes().Lister(),
		proxies:     df.ForResource(NginxProxyGVR).Lister(),
		services:    kf.Core().V1().Services().Lister(),
		deployments: kf.Apps().V1().Deployments().Lister(),
	}
	for _, inf := range []cache.SharedIndexInformer{
		gwf.Gateway().V1().GatewayClasses().Informer(),
		gwf.Gateway().V1().Gateways().Informer(),
		gwf.Gateway().V1().HTTPRoutes().Informer(),
		df.ForResource(NginxProxyGVR).Informer(),
		kf.Core().V1().Services().Informer(),
		kf.Apps().V1().Deployments().Informer(),
	} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			cancel()
			return nil, fmt.Errorf("cluster: gateway controller: %w", err)
		}
	}
	gwf.Start(ctx.Done())
	kf.Start(ctx.Done())
	df.Start(ctx.Done())
	gwf.WaitForCacheSync(ctx.Done())
	kf.WaitForCacheSync(ctx.Done())
	df.WaitForCacheSync(ctx.Done())
	go func() {
		defer close(gc.done)
		defer gwf.Shutdown()
		defer kf.Shutdown()
		defer df.Shutdown()
		for {
			select {
			case <-ctx.Done():
				return
			case <-gc.wake:
			}
			if err := gc.sync(ctx); err != nil && ctx.Err() == nil {
				t.Logf("cluster: gateway controller: %v", err)
				time.AfterFunc(500*time.Millisecond, func() { kick(nil) })
			}
		}
	}()
	kick(nil)
	return gc, nil
}

// Stop stops the controller and removes the NginxProxy CRD (and with it
// every NginxProxy). The Gateways' data planes stay until their Gateways
// are deleted.
func (gc *GatewayController) Stop() error {
	gc.stop()
	<-gc.done
	if err := envtest.UninstallCRDs(gc.c.CP.Config, envtest.CRDInstallOptions{CRDs: gc.crds}); err != nil {
		return fmt.Errorf("cluster: remove the NginxProxy CRD: %w", err)
	}
	// Gone, not terminating: the next controller installs it afresh.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	crds := gc.dyn.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	return harness.Poll(ctx, func(ctx context.Context) error {
		_, err := crds.Get(ctx, gc.crds[0].Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("cluster: the NginxProxy CRD is still there (%v)", err)
	})
}
