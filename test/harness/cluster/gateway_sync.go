package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	gw "sigs.k8s.io/gateway-api/apis/v1"
	gwlisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"
)

// controllerLists are the controller's informer caches.
type controllerLists struct {
	classes     gwlisters.GatewayClassLister
	gateways    gwlisters.GatewayLister
	routes      gwlisters.HTTPRouteLister
	proxies     cache.GenericLister
	services    corelisters.ServiceLister
	deployments appslisters.DeploymentLister
}

// sync brings every Gateway of our classes, its data plane and the
// statuses to what the objects say.
func (gc *GatewayController) sync(ctx context.Context) error {
	classes, err := gc.lists.classes.List(everything)
	if err != nil {
		return err
	}
	ours := map[string]*gw.GatewayClass{}
	var errs []error
	for _, cl := range classes {
		if cl.Spec.ControllerName != GatewayControllerName {
			continue
		}
		ours[cl.Name] = cl
		errs = append(errs, gc.acceptClass(ctx, cl))
	}
	gateways, err := gc.lists.gateways.List(everything)
	if err != nil {
		return err
	}
	routes, err := gc.lists.routes.List(everything)
	if err != nil {
		return err
	}
	sort.Slice(routes, func(i, j int) bool {
		return routes[i].Namespace+"/"+routes[i].Name < routes[j].Namespace+"/"+routes[j].Name
	})
	attached := map[string][]*gw.Gateway{}
	for _, g := range gateways {
		cl := ours[string(g.Spec.GatewayClassName)]
		if cl == nil || g.DeletionTimestamp != nil {
			continue
		}
		plane := gatewayPlane{g: g, class: cl}
		plane.proxyProtocol, plane.trusted = gc.rewriteClientIP(g, cl)
		for _, r := range routes {
			if refs := parentRefsTo(r, g); len(refs) > 0 {
				plane.routes = append(plane.routes, r)
				attached[r.Namespace+"/"+r.Name] = append(attached[r.Namespace+"/"+r.Name], g)
			}
		}
		errs = append(errs, gc.program(ctx, plane))
	}
	for _, r := range routes {
		errs = append(errs, gc.routeStatus(ctx, r, attached[r.Namespace+"/"+r.Name]))
	}
	return errors.Join(errs...)
}

// gatewayPlane is one Gateway with what its nginx.conf is rendered from.
type gatewayPlane struct {
	g             *gw.Gateway
	class         *gw.GatewayClass
	routes        []*gw.HTTPRoute
	proxyProtocol bool
	trusted       []string
}

func (p gatewayPlane) name() string { return GatewayServiceName(p.g.Name, p.class.Name) }

func (p gatewayPlane) labels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":                 p.name(),
		"app.kubernetes.io/instance":             "nginx-gateway",
		"gateway.networking.k8s.io/gateway-name": p.g.Name,
	}
}

func (p gatewayPlane) owner() []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: gw.GroupVersion.String(), Kind: "Gateway", Name: p.g.Name, UID: p.g.UID}}
}

// rewriteClientIP reads the NginxProxy that applies to g (the Gateway's
// spec.infrastructure.parametersRef, else its class's spec.parametersRef):
// whether its rewriteClientIP.mode is ProxyProtocol, and its
// trustedAddresses.
func (gc *GatewayController) rewriteClientIP(g *gw.Gateway, cl *gw.GatewayClass) (proxyProtocol bool, trusted []string) {
	read := func(ns, name string) (map[string]any, bool) {
		obj, err := gc.lists.proxies.ByNamespace(ns).Get(name)
		if err != nil {
			return nil, false
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil, false
		}
		rc, found, _ := unstructured.NestedMap(u.Object, "spec", "rewriteClientIP")
		return rc, found
	}
	var rc map[string]any
	found := false
	if inf := g.Spec.Infrastructure; inf != nil && inf.ParametersRef != nil && inf.ParametersRef.Kind == "NginxProxy" {
		rc, found = read(g.Namespace, inf.ParametersRef.Name)
	}
	if ref := cl.Spec.ParametersRef; !found && ref != nil && ref.Kind == "NginxProxy" && ref.Namespace != nil {
		rc, found = read(string(*ref.Namespace), ref.Name)
	}
	if !found {
		return false, nil
	}
	mode, _, _ := unstructured.NestedString(rc, "mode")
	addrs, _, _ := unstructured.NestedSlice(rc, "trustedAddresses")
	for _, a := range addrs {
		if m, ok := a.(map[string]any); ok {
			if v, ok := m["value"].(string); ok {
				trusted = append(trusted, v)
			}
		}
	}
	return mode == "ProxyProtocol", trusted
}

// parentRefsTo returns r's parentRefs that name g.
func parentRefsTo(r *gw.HTTPRoute, g *gw.Gateway) []gw.ParentReference {
	var refs []gw.ParentReference
	for _, ref := range r.Spec.ParentRefs {
		if ref.Group != nil && *ref.Group != gw.GroupName || ref.Kind != nil && *ref.Kind != "Gateway" {
			continue
		}
		ns := r.Namespace
		if ref.Namespace != nil {
			ns = string(*ref.Namespace)
		}
		if ns == g.Namespace && string(ref.Name) == g.Name {
			refs = append(refs, ref)
		}
	}
	return refs
}

// program writes p's ConfigMap, Deployment and Service and the Gateway's
// status.
func (gc *GatewayController) program(ctx context.Context, p gatewayPlane) error {
	conf, err := renderGatewayConf(p)
	if err != nil {
		return err
	}
	cs := gc.c.CP.Clientset
	ns := p.g.Namespace
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: p.name() + "-config", Namespace: ns, Labels: p.labels(), OwnerReferences: p.owner()},
		Data:       map[string]string{"nginx.conf": conf},
	}
	if old, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("configmap %s/%s: %w", ns, cm.Name, err)
		}
		gc.wrote("ConfigMap", ns, cm.Name)
	} else if err != nil {
		return err
	} else if !maps.Equal(old.Data, cm.Data) {
		old.Data = cm.Data
		if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, old, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("configmap %s/%s: %w", ns, cm.Name, err)
		}
		gc.wrote("ConfigMap", ns, cm.Name)
	}
	dep, err := gc.lists.deployments.Deployments(ns).Get(p.name())
	if apierrors.IsNotFound(err) {
		if dep, err = cs.AppsV1().Deployments(ns).Create(ctx, gatewayDeployment(p, cm.Name), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("deployment %s/%s: %w", ns, p.name(), err)
		}
		gc.wrote("Deployment", ns, dep.Name)
	} else if err != nil {
		return err
	}
	svc, err := gc.lists.services.Services(ns).Get(p.name())
	if apierrors.IsNotFound(err) {
		if svc, err = cs.CoreV1().Services(ns).Create(ctx, gatewayService(p), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("service %s/%s: %w", ns, p.name(), err)
		}
		gc.wrote("Service", ns, svc.Name)
	} else if err != nil {
		return err
	}
	return gc.gatewayStatus(ctx, p, svc, dep.Status.AvailableReplicas > 0)
}

func (gc *GatewayController) wrote(kind, namespace, name string) {
	if gc.afterWrite != nil {
		gc.afterWrite(kind, namespace, name)
	}
}

// gatewayDeployment runs nginx under a small agent: it starts nginx and
// reloads it whenever the mounted nginx.conf changes.
func gatewayDeployment(p gatewayPlane, configMap string) *appsv1.Deployment {
	const agent = `conf=/etc/nginx/nginx.conf
nginx -c $conf -e stderr &
pid=$!
trap 'kill $pid; exit 0' TERM
sum=$(cksum < $conf)
while kill -0 $pid 2>/dev/null; do
  sleep 0.2
  now=$(cksum < $conf)
  if [ "$now" != "$sum" ]; then
    sum=$now
    nginx -c $conf -e stderr -s reload
  fi
done`
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: p.name(), Namespace: p.g.Namespace, Labels: p.labels(), OwnerReferences: p.owner()},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: p.labels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: p.labels()},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To(int64(5)),
					Containers: []corev1.Container{{
						Name:    "nginx",
						Image:   NginxImage,
						Command: []string{"/bin/sh", "-c", agent},
						Ports:   gatewayContainerPorts(p),
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(gatewayReadyPort), Scheme: corev1.URISchemeHTTP}},
							PeriodSeconds: 1, FailureThreshold: 3,
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/nginx", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}},
				},
			},
		},
	}
}

// gatewayPorts are the distinct ports of g's HTTP listeners, in order.
func gatewayPorts(g *gw.Gateway) []int32 {
	seen := map[int32]bool{}
	var ports []int32
	for _, l := range g.Spec.Listeners {
		if l.Protocol == gw.HTTPProtocolType && !seen[int32(l.Port)] {
			seen[int32(l.Port)] = true
			ports = append(ports, int32(l.Port))
		}
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
	return ports
}

func gatewayContainerPorts(p gatewayPlane) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, port := range gatewayPorts(p.g) {
		out = append(out, corev1.ContainerPort{Name: fmt.Sprintf("port-%d", port), ContainerPort: port, Protocol: corev1.ProtocolTCP})
	}
	return out
}

// gatewayService is the Gateway's LoadBalancer Service, one port per
// listener port, with the Gateway's infrastructure annotations.
func gatewayService(p gatewayPlane) *corev1.Service {
	var annotations map[string]string
	if inf := p.g.Spec.Infrastructure; inf != nil {
		annotations = map[string]string{}
		for k, v := range inf.Annotations {
			annotations[string(k)] = string(v)
		}
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: p.name(), Namespace: p.g.Namespace, Labels: p.labels(), Annotations: annotations, OwnerReferences: p.owner()},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: p.labels()},
	}
	for _, port := range gatewayPorts(p.g) {
		name := fmt.Sprintf("port-%d", port)
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: name, Port: port, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString(name)})
	}
	return svc
}

// acceptClass writes Accepted into cl's status.
func (gc *GatewayController) acceptClass(ctx context.Context, cl *gw.GatewayClass) error {
	updated := cl.DeepCopy()
	setCondition(&updated.Status.Conditions, cl.Generation, string(gw.GatewayClassConditionStatusAccepted), true, string(gw.GatewayClassReasonAccepted))
	if equality.Semantic.DeepEqual(cl.Status, updated.Status) {
		return nil
	}
	_, err := gc.gw.GatewayV1().GatewayClasses().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	return err
}

// gatewayStatus writes the Gateway's addresses (its Service's LoadBalancer
// IPs), Accepted, Programmed (an address and an available data plane) and
// its listeners' statuses.
func (gc *GatewayController) gatewayStatus(ctx context.Context, p gatewayPlane, svc *corev1.Service, available bool) error {
	updated := p.g.DeepCopy()
	st := &updated.Status
	st.Addresses = nil
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			st.Addresses = append(st.Addresses, gw.GatewayStatusAddress{Type: ptr.To(gw.IPAddressType), Value: in.IP})
		}
	}
	programmed := available && len(st.Addresses) > 0
	setCondition(&st.Conditions, p.g.Generation, string(gw.GatewayConditionAccepted), true, string(gw.GatewayReasonAccepted))
	reason := gw.GatewayReasonProgrammed
	if !programmed {
		reason = gw.GatewayReasonPending
	}
	setCondition(&st.Conditions, p.g.Generation, string(gw.GatewayConditionProgrammed), programmed, string(reason))
	// From the copy: setCondition edits conditions in place, and p.g is
	// the informers' cache.
	old := map[gw.SectionName]gw.ListenerStatus{}
	for _, l := range st.Listeners {
		old[l.Name] = l
	}
	st.Listeners = nil
	for _, l := range p.g.Spec.Listeners {
		ls := old[l.Name]
		ls.Name = l.Name
		ls.SupportedKinds = []gw.RouteGroupKind{{Group: ptr.To(gw.Group(gw.GroupName)), Kind: "HTTPRoute"}}
		ls.AttachedRoutes = 0
		for _, r := range p.routes {
			if attachesTo(parentRefsTo(r, p.g), l) {
				ls.AttachedRoutes++
			}
		}
		ok := l.Protocol == gw.HTTPProtocolType
		setCondition(&ls.Conditions, p.g.Generation, string(gw.ListenerConditionAccepted), ok, string(gw.ListenerReasonAccepted))
		setCondition(&ls.Conditions, p.g.Generation, string(gw.ListenerConditionResolvedRefs), true, string(gw.ListenerReasonResolvedRefs))
		setCondition(&ls.Conditions, p.g.Generation, string(gw.ListenerConditionProgrammed), ok && programmed, string(reason))
		st.Listeners = append(st.Listeners, ls)
	}
	if equality.Semantic.DeepEqual(p.g.Status, *st) {
		return nil
	}
	if _, err := gc.gw.GatewayV1().Gateways(p.g.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("status of gateway %s/%s: %w", p.g.Namespace, p.g.Name, err)
	}
	return nil
}

// attachesTo reports whether one of refs selects listener l (no
// sectionName, or l's name).
func attachesTo(refs []gw.ParentReference, l gw.Listener) bool {
	for _, ref := range refs {
		if ref.SectionName == nil || *ref.SectionName == l.Name {
			return true
		}
	}
	return false
}

// routeStatus writes, for every Gateway of ours that r names, a parent
// status with Accepted and ResolvedRefs, keeping other controllers'.
func (gc *GatewayController) routeStatus(ctx context.Context, r *gw.HTTPRoute, gateways []*gw.Gateway) error {
	updated := r.DeepCopy()
	parents := []gw.RouteParentStatus{} // required, empty when no parent is ours
	old := map[string]gw.RouteParentStatus{}
	for _, ps := range updated.Status.Parents { // a copy: r is the informers' cache
		if ps.ControllerName != GatewayControllerName {
			parents = append(parents, ps)
			continue
		}
		old[refKey(ps.ParentRef)] = ps
	}
	for _, g := range gateways {
		for _, ref := range parentRefsTo(r, g) {
			ps := old[refKey(ref)]
			ps.ParentRef = ref
			ps.ControllerName = GatewayControllerName
			setCondition(&ps.Conditions, r.Generation, string(gw.RouteConditionAccepted), true, string(gw.RouteReasonAccepted))
			setCondition(&ps.Conditions, r.Generation, string(gw.RouteConditionResolvedRefs), true, string(gw.RouteReasonResolvedRefs))
			parents = append(parents, ps)
		}
	}
	updated.Status.Parents = parents
	if equality.Semantic.DeepEqual(r.Status, updated.Status) {
		return nil
	}
	if _, err := gc.gw.GatewayV1().HTTPRoutes(r.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("status of httproute %s/%s: %w", r.Namespace, r.Name, err)
	}
	return nil
}

func refKey(ref gw.ParentReference) string {
	key := string(ref.Name)
	if ref.Namespace != nil {
		key = string(*ref.Namespace) + "/" + key
	}
	if ref.SectionName != nil {
		key += "#" + string(*ref.SectionName)
	}
	return key
}

// setCondition sets one condition, keeping its lastTransitionTime when its
// status does not change.
func setCondition(conds *[]metav1.Condition, generation int64, typ string, ok bool, reason string) {
	status := metav1.ConditionTrue
	if !ok {
		status = metav1.ConditionFalse
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "written by the coredns-hairpin test cluster's Gateway controller", ObservedGeneration: generation})
}
