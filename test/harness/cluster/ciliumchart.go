package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// ciliumInstall is what Cilium's chart leaves that the harness records:
// the agent's settings, its DaemonSet and the operator's Deployment.
type ciliumInstall struct {
	config    *corev1.ConfigMap
	daemonSet *appsv1.DaemonSet
	operator  *appsv1.Deployment
	// shape is what it was rendered for, whose deviations change the
	// records.
	shape *ciliumShape
}

// renderCiliumChart renders Cilium's chart (from the module, see
// build/tools.sh) with the shape's Cozystack values files and then values, as
// Cozystack's cilium package installs it into [CiliumNamespace], and
// picks the cilium-config ConfigMap, the cilium DaemonSet and the
// cilium-operator Deployment. Their images must be Cozystack's references:
// they are records, and `kubectl hairpin check` reads Cilium's version from
// them.
func renderCiliumChart(ctx context.Context, helm *harness.Helm, chart string, shape *ciliumShape, values CiliumValues) (*ciliumInstall, error) {
	dir, err := os.MkdirTemp("", "cilium-values-")
	if err != nil {
		return nil, fmt.Errorf("cilium: %w", err)
	}
	defer os.RemoveAll(dir)
	files, err := shape.writeValueFiles(dir, values)
	if err != nil {
		return nil, err
	}
	args := []string{"template", "cilium", chart, "-n", CiliumNamespace}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	out, err := helm.Run(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("cilium: render the chart: %w", err)
	}
	in, err := pickCiliumInstall(out)
	if err != nil {
		return nil, err
	}
	in.shape = shape
	if img := in.daemonSet.Spec.Template.Spec.Containers[0].Image; img != CiliumImage {
		return nil, fmt.Errorf("cilium: the chart's agent image is %q; want Cozystack's %q", img, CiliumImage)
	}
	if img := in.operator.Spec.Template.Spec.Containers[0].Image; img != CiliumOperatorImage {
		return nil, fmt.Errorf("cilium: the chart's operator image is %q; want %q, as Cozystack's chart renders it", img, CiliumOperatorImage)
	}
	return in, nil
}

// pickCiliumInstall picks from the chart's rendering what the harness
// records.
func pickCiliumInstall(rendered string) (*ciliumInstall, error) {
	in := &ciliumInstall{}
	for _, doc := range strings.Split(rendered, "\n---") {
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
		case obj.Kind == "Deployment" && obj.Name == "cilium-operator":
			in.operator = &appsv1.Deployment{}
			err = yaml.UnmarshalStrict([]byte(doc), in.operator)
		}
		if err != nil {
			return nil, fmt.Errorf("cilium: the chart's %s %s: %w", obj.Kind, obj.Name, err)
		}
	}
	if in.config == nil || in.daemonSet == nil || in.operator == nil {
		return nil, errors.New("cilium: the chart rendered no cilium-config ConfigMap, cilium DaemonSet or cilium-operator Deployment")
	}
	return in, nil
}

// records are the objects the harness creates: the rendering, with the
// deviation table's changes to records.
func (in *ciliumInstall) records() *ciliumInstall {
	out := &ciliumInstall{config: in.config.DeepCopy(), daemonSet: in.daemonSet.DeepCopy(), operator: in.operator.DeepCopy(), shape: in.shape}
	for _, d := range in.shape.deviations {
		if d.record != nil {
			d.record(out)
		}
	}
	return out
}

// apply creates the namespace and the records in it. kube-controller-manager
// runs without its daemonset controller in the cilium mode and the
// operator's Deployment is paused, so neither gets a Pod: they are records
// of the install, whose agent runs as a process of the harness.
func (in *ciliumInstall) apply(ctx context.Context, cs kubernetes.Interface) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: CiliumNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cilium: %w", err)
	}
	r := in.records()
	if _, err := cs.CoreV1().ConfigMaps(CiliumNamespace).Create(ctx, r.config, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("cilium: %w", err)
	}
	if _, err := cs.AppsV1().DaemonSets(CiliumNamespace).Create(ctx, r.daemonSet, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("cilium: %w", err)
	}
	if _, err := cs.AppsV1().Deployments(CiliumNamespace).Create(ctx, r.operator, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("cilium: %w", err)
	}
	return nil
}
