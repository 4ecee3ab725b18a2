package main

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// corednsUser is the identity the cluster's CoreDNS has against the
// apiserver: RBAC matches ServiceAccount subjects by this user name, so a
// client certificate with it gets exactly what kube-system/coredns is bound
// to. The hairpin plugin's permissions come from the chart alone.
const corednsUser = "system:serviceaccount:kube-system:coredns"

// corednsKubeconfig creates the RBAC that the distribution gives CoreDNS
// for the kubernetes plugin (Talos and kubeadm ship the same
// system:coredns role) and returns a kubeconfig of CoreDNS's identity.
func corednsKubeconfig(ctx context.Context, cp *harness.ControlPlane) (string, error) {
	rbac := cp.Clientset.RbacV1()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create clusterrole %s: %w", role.Name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "coredns", Namespace: "kube-system"}},
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create clusterrolebinding %s: %w", binding.Name, err)
	}
	kc, _, err := cp.UserKubeconfig(corednsUser, "system:serviceaccounts", "system:serviceaccounts:kube-system")
	if err != nil {
		return "", err
	}
	return kc, nil
}
