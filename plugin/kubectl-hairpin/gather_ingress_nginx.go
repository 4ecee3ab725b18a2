package kubectlhairpin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apps "k8s.io/api/apps/v1"
	core "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ingress-nginx's defaults, when its flags do not say otherwise.
const (
	nginxController      = "k8s.io/ingress-nginx"
	nginxClass           = "nginx"
	nginxBinary          = "/nginx-ingress-controller"
	nginxProxyProtocol   = "use-proxy-protocol"
	nginxNameLabel       = "app.kubernetes.io/name"
	nginxNameLabelValue  = "ingress-nginx"
	nginxConfigMapSuffix = "controller"
)

// nginxInstance is one ingress-nginx controller workload, from its flags.
type nginxInstance struct {
	object, namespace string
	podLabels         map[string]string
	flags             map[string]string // --name=value, $(POD_NAMESPACE) expanded
}

// gatherIngressNginx finds the ingress-nginx controllers (a container
// running /nginx-ingress-controller), reads the ConfigMap each names with
// --configmap, and keeps every instance as a candidate: a cloud LB
// annotation may still say that it requires PROXY.
func (g *gatherer) gatherIngressNginx(ctx context.Context) error {
	instances := nginxInstances(g.cache.deployments, g.cache.daemonSets)
	covered := map[string]bool{}
	for _, in := range instances {
		c := g.nginxCandidate(in)
		if ref := in.flags["configmap"]; ref != "" {
			ns, name, _ := strings.Cut(ref, "/")
			covered[ns+"/"+name] = true
			cm, err := g.c.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, meta.GetOptions{})
			ok, err := g.read(err, "get configmaps/"+name+" in "+ns, "whether "+in.object+" requires PROXY is unknown")
			if err != nil {
				return err
			}
			if ok {
				c.Reasons = append(c.Reasons, nginxReasons(cm)...)
			}
		}
		g.candidates = append(g.candidates, c)
	}
	if len(instances) > 0 && !g.deploymentsDenied && !g.daemonSetsDenied {
		return nil
	}
	return g.nginxConfigMapsWithoutWorkload(ctx, covered)
}

// nginxConfigMapsWithoutWorkload covers controllers whose workload could
// not be read or was not recognised: ingress-nginx's own ConfigMap,
// labelled by its chart, stands for the controller of its namespace.
func (g *gatherer) nginxConfigMapsWithoutWorkload(ctx context.Context, covered map[string]bool) error {
	list, err := g.c.Kube.CoreV1().ConfigMaps("").List(ctx, meta.ListOptions{LabelSelector: nginxNameLabel + "=" + nginxNameLabelValue})
	if ok, err := g.read(err, "list configmaps in all namespaces (label "+nginxNameLabel+"="+nginxNameLabelValue+")", "ingress-nginx ConfigMaps are looked for only through their controllers' --configmap"); !ok {
		return err
	}
	for i := range list.Items {
		cm := &list.Items[i]
		reasons := nginxReasons(cm)
		if covered[cm.Namespace+"/"+cm.Name] || !strings.HasSuffix(cm.Name, nginxConfigMapSuffix) || len(reasons) == 0 {
			continue
		}
		c := &Controller{Kind: "ingress-nginx", Object: "configmap/" + cm.Namespace + "/" + cm.Name, Reasons: reasons}
		c.IngressClasses = g.nginxClasses(nginxController, "")
		for j := range g.cache.services {
			svc := &g.cache.services[j]
			if svc.Namespace == cm.Namespace && svc.Labels[nginxNameLabel] == nginxNameLabelValue && exposed(svc) {
				c.LBs = append(c.LBs, svc)
			}
		}
		if len(c.LBs) > 0 {
			c.Upstream = c.LBs[0]
		}
		g.candidates = append(g.candidates, c)
	}
	return nil
}

func nginxReasons(cm *core.ConfigMap) []Reason {
	v := cm.Data[nginxProxyProtocol]
	if !isTrue(v) {
		return nil
	}
	return []Reason{{Text: fmt.Sprintf("ConfigMap %s/%s: %s: %q", cm.Namespace, cm.Name, nginxProxyProtocol, v), Object: "configmap/" + cm.Namespace + "/" + cm.Name}}
}

// nginxCandidate is an instance with the classes it serves and its
// Services; Reasons are added by whoever finds them.
func (g *gatherer) nginxCandidate(in nginxInstance) *Controller {
	c := &Controller{Kind: "ingress-nginx", Object: in.object}
	controllerClass := in.flags["controller-class"]
	if controllerClass == "" {
		controllerClass = nginxController
	}
	c.IngressClasses = g.nginxClasses(controllerClass, in.flags["ingress-class"])
	publish := in.flags["publish-service"]
	for i := range g.cache.services {
		svc := &g.cache.services[i]
		if svc.Namespace != in.namespace && svc.Namespace+"/"+svc.Name != publish {
			continue
		}
		selects := len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(in.podLabels))
		if !selects && svc.Namespace+"/"+svc.Name != publish {
			continue
		}
		if exposed(svc) {
			c.LBs = append(c.LBs, svc)
		}
		if c.Upstream == nil && servesHTTP(svc) {
			c.Upstream = svc
		}
	}
	for _, lb := range c.LBs {
		if servesHTTP(lb) {
			c.Upstream = lb
			break
		}
	}
	return c
}

// nginxClasses returns the IngressClasses of controllerClass, only the one
// named by --ingress-class when it is set; with no such IngressClass
// object, the flag's value (or ingress-nginx's default class).
func (g *gatherer) nginxClasses(controllerClass, flagClass string) []string {
	var out []string
	for _, ic := range g.cache.ingressClasses {
		if ic.Spec.Controller == controllerClass && (flagClass == "" || ic.Name == flagClass) {
			out = append(out, ic.Name)
		}
	}
	if len(out) > 0 {
		return out
	}
	if flagClass != "" {
		return []string{flagClass}
	}
	return []string{nginxClass}
}

// servesHTTP reports whether svc has port 80 or 443: the controller's
// traffic Service, not its admission webhook or metrics.
func servesHTTP(svc *core.Service) bool {
	return slices.ContainsFunc(svc.Spec.Ports, func(p core.ServicePort) bool { return p.Port == 80 || p.Port == 443 })
}

// nginxInstances finds the workloads that run ingress-nginx's controller.
func nginxInstances(deployments []apps.Deployment, daemonSets []apps.DaemonSet) []nginxInstance {
	var out []nginxInstance
	add := func(kind string, m meta.ObjectMeta, spec core.PodTemplateSpec) {
		for _, c := range spec.Spec.Containers {
			args := append(slices.Clone(c.Command), c.Args...)
			if !slices.ContainsFunc(args, func(a string) bool { return strings.HasSuffix(a, nginxBinary) }) {
				continue
			}
			out = append(out, nginxInstance{
				object:    kind + "/" + m.Namespace + "/" + m.Name,
				namespace: m.Namespace,
				podLabels: spec.Labels,
				flags:     parseFlags(expandArgs(args, c.Env, m.Namespace)),
			})
			return
		}
	}
	for _, d := range deployments {
		add("deployment", d.ObjectMeta, d.Spec.Template)
	}
	for _, d := range daemonSets {
		add("daemonset", d.ObjectMeta, d.Spec.Template)
	}
	return out
}

// expandArgs expands $(VAR) as the kubelet does, for the variables whose
// value the pod spec holds: literal values, and the pod's namespace.
func expandArgs(args []string, env []core.EnvVar, namespace string) []string {
	vars := map[string]string{}
	for _, e := range env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			vars[e.Name] = namespace
		}
	}
	out := make([]string, len(args))
	for i, a := range args {
		for name, v := range vars {
			a = strings.ReplaceAll(a, "$("+name+")", v)
		}
		out[i] = a
	}
	return out
}

// parseFlags reads --name=value and --name value.
func parseFlags(args []string) map[string]string {
	flags := map[string]string{}
	for i := 0; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			continue
		}
		if n, v, ok := strings.Cut(name, "="); ok {
			flags[n] = v
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			flags[name] = args[i+1]
			i++
			continue
		}
		flags[name] = "true"
	}
	return flags
}
