package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// DefaultCiliumValues are the chart values of the cilium dataplane:
// Cozystack's (packages/system/cilium/values.yaml of cozystack/cozystack,
// under its `cilium:` key), then what this test node changes. A fresh
// slice each call: a shape may change its copy.
func DefaultCiliumValues() []string { return slices.Clone(defaultCiliumValues) }

var defaultCiliumValues = []string{
	// Cozystack's.
	"kubeProxyReplacement=true",
	"hostFirewall.enabled=true",
	"hubble.enabled=false",
	"externalIPs.enabled=true",
	"nodePort.enabled=true",
	"loadBalancer.algorithm=maglev",
	"loadBalancer.serviceTopology=true",
	"ipam.mode=kubernetes",
	"envoy.enabled=false",
	// The test node's. Upstream's image, not Cozystack's rebuild of it.
	"image.useDigest=false",
	// Socket load balancing, which kube-proxy replacement turns on anyway
	// (said here, or the ConfigMap would say bpf-lb-sock "false"), in the
	// node's namespace and the Pods' alike, as in Cozystack: its programs
	// attach to the node's cgroup, which holds the node's processes only.
	"socketLB.enabled=true",
	// No Envoy binary can be had here.
	"l7Proxy=false",
	// No cilium-health binary either, and one node has no peers.
	"healthChecking=false",
	"endpointHealthChecking.enabled=false",
	// Pod traffic leaves the node unmasqueraded and outside routes the
	// Pods back, as in the kube-proxy modes (a routed Pod network).
	"enableIPv4Masquerade=false",
	// The node agent's CNI folder is the test's own: nothing to remove.
	"cni.exclusive=false",
}

// ciliumInstall is what Cilium's chart leaves that the harness records:
// the agent's settings and its DaemonSet.
type ciliumInstall struct {
	config    *corev1.ConfigMap
	daemonSet *appsv1.DaemonSet
}

// renderCiliumChart renders Cilium's chart (from the module, see
// build/tools.sh) with values, as `helm install cilium -n
// kube-system` would apply it, and picks the cilium-config ConfigMap and the
// cilium DaemonSet.
func renderCiliumChart(ctx context.Context, helm *harness.Helm, chart string, values []string) (*ciliumInstall, error) {
	args := []string{"template", "cilium", chart, "-n", "kube-system"}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	out, err := helm.Run(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("cilium: render the chart: %w", err)
	}
	in := &ciliumInstall{}
	for _, doc := range strings.Split(out, "\n---") {
		var obj struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || obj.Kind == "" {
			continue
		}
		var err error
		switch {
		case obj.Kind == "ConfigMap" && obj.Name == "cilium-config":
			in.config = &corev1.ConfigMap{}
			err = yaml.UnmarshalStrict([]byte(doc), in.config)
		case obj.Kind == "DaemonSet" && obj.Name == "cilium":
			in.daemonSet = &appsv1.DaemonSet{}
			err = yaml.UnmarshalStrict([]byte(doc), in.daemonSet)
		}
		if err != nil {
			return nil, fmt.Errorf("cilium: the chart's %s %s: %w", obj.Kind, obj.Name, err)
		}
	}
	if in.config == nil || in.daemonSet == nil {
		return nil, fmt.Errorf("cilium: the chart rendered no cilium-config ConfigMap or cilium DaemonSet")
	}
	if img := in.daemonSet.Spec.Template.Spec.Containers[0].Image; img != CiliumImage {
		return nil, fmt.Errorf("cilium: the chart's agent image is %q; want %q (the Cilium that build/tools.sh builds)", img, CiliumImage)
	}
	return in, nil
}

// apply creates the ConfigMap and the DaemonSet in kube-system.
// kube-controller-manager runs without its daemonset controller in the
// cilium mode, so the DaemonSet never gets a Pod: it is a record of the
// install, whose agent runs as a process of the harness.
func (in *ciliumInstall) apply(ctx context.Context, cs kubernetes.Interface) error {
	if _, err := cs.CoreV1().ConfigMaps("kube-system").Create(ctx, in.config, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("cilium: %w", err)
	}
	if _, err := cs.AppsV1().DaemonSets("kube-system").Create(ctx, in.daemonSet, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("cilium: %w", err)
	}
	return nil
}
