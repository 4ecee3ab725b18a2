package dataplane

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// ouroboros v0.8.1 (lexfrei/ouroboros at 6b61800a6a14) as Cozystack
// installs it, standing in for the real thing: its module is not served
// here, so its binary cannot be built or run. What a migration acts on is
// what this file reproduces from its chart and code:
//
//   - its objects, as charts/ouroboros renders them for the release
//     `ouroboros` (Cozystack's releaseName, packages/core/platform/sources/
//     ouroboros.yaml): the controller Deployment `ouroboros` unless
//     controller.enabled is false (templates/controller-deployment.yaml),
//     the proxy Deployment and Service `ouroboros-proxy` (ports 80 and
//     443 to :8080 and :8443, 2 replicas) unless proxy.enabled is false
//     (templates/proxy-*.yaml);
//   - the proxy: a TCP relay that writes a PROXY v1 header to one
//     upstream, the ingress controller of proxy.target. Our hairpin-proxy
//     with --proxy-protocol=1 and one route per port does exactly that;
//   - the controller: see [OuroborosController];
//   - helm uninstall: the pre-delete hook strips the lines
//     (templates/coredns-cleanup-hook.yaml), then every object goes.

// Ouroboros is one ouroboros release on a cluster.
type Ouroboros struct {
	// Namespace and Release are the release's (Cozystack's:
	// cozy-ouroboros, ouroboros).
	Namespace, Release string
	// Mode is controller.mode: OuroborosCoreDNS or OuroborosImport.
	Mode string
	// ClusterDomain composes the rewrite target (the chart's proxyFqdn).
	ClusterDomain string
	// Upstream is proxy.target: the ingress controller its proxy fronts,
	// "namespace/service".
	Upstream string
	// ProxyImage and ControllerImage are what the node runs for the two
	// Deployments: our proxy's image, and a process that only waits (the
	// controller's work is [OuroborosController]'s).
	ProxyImage, ControllerImage string
}

// ouroboros's two CoreDNS modes (values.yaml controller.mode).
const (
	// OuroborosCoreDNS writes a marked block into the Corefile of
	// kube-system/coredns (the management cluster's mode).
	OuroborosCoreDNS = "coredns"
	// OuroborosImport writes the key ouroboros.override of
	// kube-system/coredns-custom, which the Corefile imports (a tenant's).
	OuroborosImport = "coredns-import"
)

// OuroborosImportKey is controller.corednsImport.key, in the ConfigMap
// controller.corednsImport.configmap (CustomConfigMap).
const OuroborosImportKey = "ouroboros.override"

// CustomConfigMap is the ConfigMap in kube-system whose *.override keys
// a Corefile's `import /etc/coredns/custom/*.override` reads.
const CustomConfigMap = "coredns-custom"

// ProxyName is the proxy's Deployment and Service (ouroboros.proxyFullname).
func (o *Ouroboros) ProxyName() string { return o.Release + "-proxy" }

// ControllerName is the controller's Deployment (ouroboros.fullname).
func (o *Ouroboros) ControllerName() string { return o.Release }

// Target is the rewrite target, with its trailing dot (ouroboros.proxyFqdn).
func (o *Ouroboros) Target() string {
	return o.ProxyName() + "." + o.Namespace + ".svc." + o.ClusterDomain + "."
}

// labels are the chart's labels of a component.
func (o *Ouroboros) labels(component string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "ouroboros", "app.kubernetes.io/instance": o.Release, "app.kubernetes.io/component": component}
}

// Apply renders the release with values (the chart's, under its own
// keys: controller.enabled, proxy.enabled; both default true) onto the
// cluster, as a helm install or upgrade does: what the chart renders
// exists, what it no longer renders is deleted.
func (o *Ouroboros) Apply(ctx context.Context, cs kubernetes.Interface, values map[string]any) error {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("ouroboros: %w", err)
	}
	deps := cs.AppsV1().Deployments(o.Namespace)
	if enabled(values, "proxy") {
		if err := create(ctx, cs.CoreV1().Services(o.Namespace).Create, o.proxyService()); err != nil {
			return err
		}
		if err := create(ctx, deps.Create, o.proxyDeployment()); err != nil {
			return err
		}
	} else if err := o.deleteProxy(ctx, cs); err != nil {
		return err
	}
	if enabled(values, "controller") {
		return create(ctx, deps.Create, o.controllerDeployment())
	}
	return deleteIgnoringNotFound(deps.Delete(ctx, o.ControllerName(), metav1.DeleteOptions{}))
}

// Uninstall is helm uninstall of the release: the pre-delete hook takes
// the lines out (cleanupOnUninstall, on by default), then every object of
// the chart goes.
func (o *Ouroboros) Uninstall(ctx context.Context, cs kubernetes.Interface) error {
	if err := o.RemoveLines(ctx, cs); err != nil {
		return err
	}
	if err := deleteIgnoringNotFound(cs.AppsV1().Deployments(o.Namespace).Delete(ctx, o.ControllerName(), metav1.DeleteOptions{})); err != nil {
		return err
	}
	return o.deleteProxy(ctx, cs)
}

func (o *Ouroboros) deleteProxy(ctx context.Context, cs kubernetes.Interface) error {
	if err := deleteIgnoringNotFound(cs.AppsV1().Deployments(o.Namespace).Delete(ctx, o.ProxyName(), metav1.DeleteOptions{})); err != nil {
		return err
	}
	return deleteIgnoringNotFound(cs.CoreV1().Services(o.Namespace).Delete(ctx, o.ProxyName(), metav1.DeleteOptions{}))
}

// WriteLines writes one rewrite line per host where the mode writes
// them, as its reconciler does (internal/coredns/corefile.go Apply: the
// block replaced, or added last to the .:53 server block;
// import_reconciler.go: the key set, in a ConfigMap that must exist). It
// reports whether it changed anything.
func (o *Ouroboros) WriteLines(ctx context.Context, cs kubernetes.Interface, hosts []string) (bool, error) {
	return o.updateConfig(ctx, cs, func(data map[string]string) error {
		if o.Mode == OuroborosImport {
			data[OuroborosImportKey] = harness.OuroborosOverride(hosts, o.Target())
			return nil
		}
		corefile, err := harness.OuroborosCorefile(harness.OuroborosStripped(data["Corefile"]), hosts, o.Target())
		data["Corefile"] = corefile
		return err
	})
}

// RemoveLines takes the lines out as the chart's pre-delete hook does,
// and as docs/migrate.md has an operator do: the marked block stripped,
// or the key removed.
func (o *Ouroboros) RemoveLines(ctx context.Context, cs kubernetes.Interface) error {
	_, err := o.updateConfig(ctx, cs, func(data map[string]string) error {
		if o.Mode == OuroborosImport {
			delete(data, OuroborosImportKey)
		} else {
			data["Corefile"] = harness.OuroborosStripped(data["Corefile"])
		}
		return nil
	})
	return err
}

// HasLines reports whether the mode's lines are in CoreDNS's ConfigMap.
func (o *Ouroboros) HasLines(ctx context.Context, cs kubernetes.Interface) (bool, error) {
	cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, o.configMap(), metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("ouroboros: %w", err)
	}
	if o.Mode == OuroborosImport {
		_, ok := cm.Data[OuroborosImportKey]
		return ok, nil
	}
	return strings.Contains(cm.Data["Corefile"], harness.OuroborosBegin), nil
}

func (o *Ouroboros) configMap() string {
	if o.Mode == OuroborosImport {
		return CustomConfigMap
	}
	return "coredns"
}

// updateConfig applies edit to the data of the mode's ConfigMap and
// writes it when it changed.
func (o *Ouroboros) updateConfig(ctx context.Context, cs kubernetes.Interface, edit func(map[string]string) error) (bool, error) {
	cms := cs.CoreV1().ConfigMaps("kube-system")
	cm, err := cms.Get(ctx, o.configMap(), metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("ouroboros: %w", err)
	}
	data := maps.Clone(cm.Data)
	if data == nil {
		data = map[string]string{}
	}
	if err := edit(data); err != nil {
		return false, fmt.Errorf("ouroboros: %w", err)
	}
	if maps.Equal(data, cm.Data) {
		return false, nil
	}
	cm.Data = data
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return false, fmt.Errorf("ouroboros: %w", err)
	}
	return true, nil
}

func (o *Ouroboros) proxyService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: o.ProxyName(), Namespace: o.Namespace, Labels: o.labels("proxy")},
		Spec: corev1.ServiceSpec{
			Selector: o.labels("proxy"),
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP},
				{Name: "https", Port: 443, TargetPort: intstr.FromString("https"), Protocol: corev1.ProtocolTCP},
			},
		},
	}
}

// proxyDeployment is the proxy as the chart runs it (2 replicas, :8080
// and :8443 to the upstream's 80 and 443), our proxy in its place.
func (o *Ouroboros) proxyDeployment() *appsv1.Deployment {
	ns, svc, _ := strings.Cut(o.Upstream, "/")
	upstream := svc + "." + ns + ".svc." + o.ClusterDomain + "."
	return o.deployment(o.ProxyName(), "proxy", 2, corev1.Container{
		Name: "proxy", Image: o.ProxyImage,
		Args: []string{"--route=:8080=" + upstream + ":80", "--route=:8443=" + upstream + ":443",
			"--proxy-protocol=1", "--health-addr=:9090"},
		Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "https", ContainerPort: 8443, Protocol: corev1.ProtocolTCP},
			{Name: "health", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("health")}},
			PeriodSeconds: 2, FailureThreshold: 2, TimeoutSeconds: 1,
		},
	})
}

// controllerDeployment is the controller's Deployment: its Pod only
// waits, the stand-in's work is [OuroborosController]'s.
func (o *Ouroboros) controllerDeployment() *appsv1.Deployment {
	return o.deployment(o.ControllerName(), "controller", 1, corev1.Container{
		Name: "controller", Image: o.ControllerImage, Command: []string{"sleep", "infinity"},
	})
}

// deployment is one of the chart's Deployments: component's labels,
// replicas of one container.
func (o *Ouroboros) deployment(name, component string, replicas int32, c corev1.Container) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: o.labels(component)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: o.labels(component)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: o.labels(component)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
			},
		},
	}
}

// enabled reads the chart's <component>.enabled from values (default true).
func enabled(values map[string]any, component string) bool {
	c, _ := values[component].(map[string]any)
	on, set := c["enabled"].(bool)
	return !set || on
}

// create creates obj unless it exists.
func create[T any](ctx context.Context, fn func(context.Context, T, metav1.CreateOptions) (T, error), obj T) error {
	if _, err := fn(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("ouroboros: %w", err)
	}
	return nil
}

func deleteIgnoringNotFound(err error) error {
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("ouroboros: %w", err)
	}
	return nil
}

// IngressHosts are the hosts of every Ingress rule in the cluster, what
// ouroboros's controller collects with controller.ingressClass empty
// (Cozystack's): it hairpins every host, whichever controller serves it.
func IngressHosts(ctx context.Context, cs kubernetes.Interface) ([]string, error) {
	ings, err := cs.NetworkingV1().Ingresses("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("ouroboros: %w", err)
	}
	var hosts []string
	for _, ing := range ings.Items {
		for _, r := range ing.Spec.Rules {
			if r.Host != "" && !slices.Contains(hosts, r.Host) {
				hosts = append(hosts, r.Host)
			}
		}
	}
	return hosts, nil
}
