package harness

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// EndpointsManager is the managed-by label of the EndpointSlices that
// tests write, so that a real EndpointSlice controller leaves them alone.
const EndpointsManager = "harness.coredns-hairpin.io"

// endpointAddress is the address of the one endpoint of EndpointSliceFor.
const endpointAddress = "198.18.0.1"

// EndpointSliceFor is the EndpointSlice that kube-controller-manager's
// EndpointSlice controller writes for svc when one Pod behind it serves
// every port of svc: the Service's labels copied, the
// service-name label, one entry per port named as the Service names it. An
// envtest control plane runs no such controller, so a test that needs a
// Service with endpoints writes this itself. ready is the endpoint's ready
// condition. The Pod's address is only data, never dialled: the apiserver
// refuses a loopback one, so it is from the test clusters' Pod range.
//
// From k8s.io/endpointslice v0.37.2, utils.go: setEndpointSliceLabels
// (the Service's labels and discovery.k8s.io/service-name) and
// getEndpointPorts (a port entry for each Service port the Pod has).
func EndpointSliceFor(svc *corev1.Service, ready bool) *discoveryv1.EndpointSlice {
	labels := map[string]string{}
	for k, v := range svc.Labels {
		labels[k] = v
	}
	labels[discoveryv1.LabelServiceName] = svc.Name
	labels[discoveryv1.LabelManagedBy] = EndpointsManager
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name + "-harness", Labels: labels},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{endpointAddress},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready)},
		}},
	}
	for _, p := range svc.Spec.Ports {
		port := p.TargetPort.IntVal
		if port == 0 {
			port = p.Port
		}
		protocol := p.Protocol
		if protocol == "" {
			protocol = corev1.ProtocolTCP
		}
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To(port), Protocol: ptr.To(protocol)})
	}
	return s
}

// WriteEndpointSlice creates slice, or replaces the one of its name.
func WriteEndpointSlice(ctx context.Context, cs kubernetes.Interface, slice *discoveryv1.EndpointSlice) error {
	slices := cs.DiscoveryV1().EndpointSlices(slice.Namespace)
	cur, err := slices.Get(ctx, slice.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = slices.Create(ctx, slice, metav1.CreateOptions{})
	case err == nil:
		slice = slice.DeepCopy()
		slice.ResourceVersion = cur.ResourceVersion
		_, err = slices.Update(ctx, slice, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("endpointslice %s/%s: %w", slice.Namespace, slice.Name, err)
	}
	return nil
}

// ServeEndpoints writes the EndpointSlice of svc with its one endpoint
// ready: what the plugin waits for before a target takes hosts.
func ServeEndpoints(ctx context.Context, cs kubernetes.Interface, svc *corev1.Service) error {
	return WriteEndpointSlice(ctx, cs, EndpointSliceFor(svc, true))
}

// ServeEndpointsOf writes a ready EndpointSlice for every Service in
// namespace that matches selector: on an envtest control plane, what the
// EndpointSlice controller would write once the Pods behind them (a chart's
// proxy) are ready. Call it after each install or upgrade that adds some.
func ServeEndpointsOf(ctx context.Context, cs kubernetes.Interface, namespace, selector string) error {
	svcs, err := cs.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return fmt.Errorf("services %s in %s: %w", selector, namespace, err)
	}
	for i := range svcs.Items {
		if err := ServeEndpoints(ctx, cs, &svcs.Items[i]); err != nil {
			return err
		}
	}
	return nil
}
