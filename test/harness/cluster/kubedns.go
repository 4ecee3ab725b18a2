package cluster

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// KubeDNSOptions configures [Cluster.InstallKubeDNS].
type KubeDNSOptions struct {
	// Image is the CoreDNS image reference (one of Options.Images).
	Image string
	// Corefile is the Corefile ConfigMap's text, as the distribution ships it.
	Corefile string
	// Replicas defaults to 2, as kubeadm deploys it.
	Replicas int32
	// ServiceAccount is the Pods' ServiceAccount, which system:coredns is
	// bound to; default kubeadm's coredns (the coredns Helm chart, as
	// Cozystack's tenant clusters run it, names it kube-dns).
	ServiceAccount string
	// CustomConfigMap names the ConfigMap that a Corefile's `import
	// /etc/coredns/custom/*.override` reads: created with no data, as
	// Cozystack's coredns package renders coredns-custom, and mounted
	// optional at [CustomDir], so the import matches nothing until an
	// operator writes a key. "" mounts none (kubeadm's).
	CustomConfigMap string
}

// CustomDir is where kube-dns mounts [KubeDNSOptions.CustomConfigMap].
const CustomDir = "/etc/coredns/custom"

// InstallKubeDNS deploys CoreDNS the way kubeadm deploys it: the coredns
// ServiceAccount (opts.ServiceAccount) with system:coredns RBAC, the coredns ConfigMap holding
// the Corefile, the coredns Deployment (dnsPolicy Default, the Corefile
// mounted at /etc/coredns, probes on :8080/health and :8181/ready, the 170Mi
// limit), and the kube-dns Service at DNSIP; with opts.CustomConfigMap,
// that ConfigMap mounted optional at [CustomDir]. It returns once the
// Deployment is available.
func (c *Cluster) InstallKubeDNS(ctx context.Context, opts KubeDNSOptions) error {
	if opts.Replicas == 0 {
		opts.Replicas = 2
	}
	if opts.ServiceAccount == "" {
		opts.ServiceAccount = "coredns"
	}
	const ns = "kube-system"
	labels := map[string]string{"k8s-app": "kube-dns"}
	cs := c.CP.Clientset
	objects := []func() error{
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: opts.ServiceAccount, Namespace: ns}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
				Rules: []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
					{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
				},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:coredns"},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: opts.ServiceAccount, Namespace: ns}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error { return c.ApplyCorefile(ctx, opts.Corefile) },
		func() error {
			if opts.CustomConfigMap == "" {
				return nil
			}
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: opts.CustomConfigMap, Namespace: ns}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.AppsV1().Deployments(ns).Create(ctx, kubeDNSDeployment(opts, labels), metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: ns,
					Labels:      map[string]string{"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"},
					Annotations: map[string]string{"prometheus.io/port": "9153", "prometheus.io/scrape": "true"}},
				Spec: corev1.ServiceSpec{
					Selector:  labels,
					ClusterIP: DNSIP.String(),
					Ports: []corev1.ServicePort{
						{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
						{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
						{Name: "metrics", Port: 9153, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9153)},
					},
				},
			}, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range objects {
		if err := create(); err != nil {
			return fmt.Errorf("cluster: kube-dns: %w", err)
		}
	}
	return c.WaitDeployment(ctx, ns, "coredns")
}

// ApplyCorefile writes text into the coredns ConfigMap, creating it or
// replacing its Corefile, as a distribution's re-render does.
func (c *Cluster) ApplyCorefile(ctx context.Context, text string) error {
	cms := c.CP.Clientset.CoreV1().ConfigMaps("kube-system")
	cm, err := cms.Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"}, Data: map[string]string{"Corefile": text}}, metav1.CreateOptions{})
		return err
	}
	cm.Data = map[string]string{"Corefile": text}
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// kubeDNSDeployment is kubeadm's coredns Deployment with opts' image,
// ServiceAccount and custom ConfigMap.
func kubeDNSDeployment(opts KubeDNSOptions, labels map[string]string) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(opts.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: opts.ServiceAccount,
					DNSPolicy:          corev1.DNSDefault,
					NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
					Tolerations: []corev1.Toleration{
						{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
						{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
					},
					Containers: []corev1.Container{{
						Name:            "coredns",
						Image:           opts.Image,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args:            []string{"-conf", "/etc/coredns/Corefile"},
						Resources: corev1.ResourceRequirements{
							Limits:   corev1.ResourceList{corev1.ResourceMemory: mustQuantity("170Mi")},
							Requests: corev1.ResourceList{corev1.ResourceCPU: mustQuantity("100m"), corev1.ResourceMemory: mustQuantity("70Mi")},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "config-volume", MountPath: "/etc/coredns", ReadOnly: true}},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
							{Name: "metrics", ContainerPort: 9153, Protocol: corev1.ProtocolTCP},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}, Drop: []corev1.Capability{"ALL"}},
							ReadOnlyRootFilesystem:   ptr.To(true),
						},
						LivenessProbe: &corev1.Probe{
							ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}},
							InitialDelaySeconds: 60, TimeoutSeconds: 5, SuccessThreshold: 1, FailureThreshold: 5,
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8181), Scheme: corev1.URISchemeHTTP}},
							PeriodSeconds: 1,
						},
					}},
					Volumes: []corev1.Volume{{Name: "config-volume", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "coredns"},
						Items:                []corev1.KeyToPath{{Key: "Corefile", Path: "Corefile"}},
					}}}},
				},
			},
		},
	}
	if opts.CustomConfigMap != "" {
		spec := &d.Spec.Template.Spec
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "custom-config-volume", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: opts.CustomConfigMap}, Optional: ptr.To(true),
		}}})
		c := &spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "custom-config-volume", MountPath: CustomDir, ReadOnly: true})
	}
	return d
}
