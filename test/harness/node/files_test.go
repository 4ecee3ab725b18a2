package node_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testResolvConf(t *testing.T, f *fixture) {
	ns := f.namespace(t, "dns")
	two, five := "2", "5"
	for _, tc := range []struct {
		name   string
		policy corev1.DNSPolicy
		config *corev1.PodDNSConfig
		want   string
	}{
		{name: "cluster-first", policy: corev1.DNSClusterFirst,
			want: "search dns.svc.cluster.local svc.cluster.local cluster.local example.test\nnameserver 198.19.0.10\noptions ndots:5\n"},
		{name: "default", policy: corev1.DNSDefault,
			want: "search example.test\nnameserver 203.0.113.53\noptions timeout:2\n"},
		{name: "none", policy: corev1.DNSNone,
			config: &corev1.PodDNSConfig{Nameservers: []string{"198.18.9.53"}, Searches: []string{"a.test"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "edns0"}}},
			want:   "search a.test\nnameserver 198.18.9.53\noptions ndots:2 edns0\n"},
		{name: "cluster-first-merged", policy: corev1.DNSClusterFirst,
			config: &corev1.PodDNSConfig{Searches: []string{"extra.test"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &five}, {Name: "single-request"}}},
			want:   "search dns.svc.cluster.local svc.cluster.local cluster.local example.test extra.test\nnameserver 198.19.0.10\noptions ndots:5 single-request\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := hostPod(tc.name, "sleep", "3600")
			pod.Spec.DNSPolicy, pod.Spec.DNSConfig = tc.policy, tc.config
			f.create(t, ns, pod)
			p := f.waitReady(t, ns, tc.name)
			if got := f.exec(t, ns, tc.name, "cat", "/etc/resolv.conf"); got != tc.want {
				t.Errorf("resolv.conf:\n%s\nwant:\n%s", got, tc.want)
			}
			if got := f.exec(t, ns, tc.name, "hostname"); got != tc.name+"\n" {
				t.Errorf("hostname %q", got)
			}
			if hosts := f.exec(t, ns, tc.name, "cat", "/etc/hosts"); !strings.Contains(hosts, p.Status.PodIP+"\t"+tc.name+"\n") ||
				!strings.HasPrefix(hosts, "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n") {
				t.Errorf("/etc/hosts:\n%s", hosts)
			}
		})
	}
}

var tsDir = regexp.MustCompile(`^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d+$`)

func testConfigMapUpdate(t *testing.T, f *fixture) {
	ns := f.namespace(t, "cm")
	cms := f.client.CoreV1().ConfigMaps(ns)
	_, err := cms.Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Data:       map[string]string{"greeting": "v1", "other": "x"},
	}, metav1.CreateOptions{})
	must(t, err)
	mode := int32(0o600)
	pod := hostPod("reader", "sleep", "3600")
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "all", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}},
		{Name: "some", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"},
			Items:                []corev1.KeyToPath{{Key: "greeting", Path: "sub/renamed", Mode: &mode}}}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "all", MountPath: "/config", ReadOnly: true},
		{Name: "some", MountPath: "/etc/app"},
		{Name: "some", MountPath: "/srv/pinned", SubPath: "sub/renamed"},
		{Name: "scratch", MountPath: "/scratch"},
	}
	f.create(t, ns, pod)
	f.waitReady(t, ns, "reader")
	if got := f.exec(t, ns, "reader", "cat", "/config/greeting", "/etc/app/sub/renamed", "/srv/pinned"); got != "v1v1v1" {
		t.Fatalf("contents %q", got)
	}
	if got := f.exec(t, ns, "reader", "readlink", "/config/greeting"); got != "..data/greeting\n" {
		t.Errorf("/config/greeting links to %q", got)
	}
	old := strings.TrimSpace(f.exec(t, ns, "reader", "readlink", "/config/..data"))
	if !tsDir.MatchString(old) {
		t.Fatalf("..data links to %q, not a timestamped dir", old)
	}
	if got := f.exec(t, ns, "reader", "stat", "-L", "-c", "%a", "/etc/app/sub/renamed"); got != "600\n" {
		t.Errorf("item mode %q", got)
	}
	if _, _, err := f.node.Exec(t.Context(), ns, "reader", "main", "touch", "/config/new"); err == nil {
		t.Error("a readOnly mount is writable")
	}
	f.exec(t, ns, "reader", "sh", "-c", "echo data > /scratch/file && echo tmp > /tmp/file && cat /scratch/file /tmp/file")

	cm, err := cms.Get(t.Context(), "app", metav1.GetOptions{})
	must(t, err)
	cm.Data = map[string]string{"greeting": "v2"}
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	must(t, err)
	start := time.Now()
	for f.exec(t, ns, "reader", "cat", "/config/greeting") != "v2" {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the ConfigMap update did not reach the volume in 5s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("ConfigMap update visible in the pod after %s", time.Since(start).Round(time.Millisecond))
	now := strings.TrimSpace(f.exec(t, ns, "reader", "readlink", "/config/..data"))
	if now == old || !tsDir.MatchString(now) {
		t.Errorf("..data went from %q to %q", old, now)
	}
	if ls := f.exec(t, ns, "reader", "ls", "-a", "/config"); strings.Contains(ls, old) || strings.Contains(ls, "other") {
		t.Errorf("old payload left:\n%s", ls)
	}
	if got := f.exec(t, ns, "reader", "cat", "/srv/pinned"); got != "v1" {
		t.Errorf("a subPath mount followed the update (%q); kubelet's does not", got)
	}
}

func testToken(t *testing.T, f *fixture) {
	ns := f.namespace(t, "token")
	expiry := int64(3607)
	uid := int64(1000)
	no := false
	pod := hostPod("api-user", "sleep", "3600")
	pod.Spec.AutomountServiceAccountToken = &no
	pod.Spec.ServiceAccountName = "default"
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid}
	pod.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &expiry, Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		},
	}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	f.create(t, ns, pod)
	f.waitReady(t, ns, "api-user")
	dir := "/var/run/secrets/kubernetes.io/serviceaccount/"
	if got := f.exec(t, ns, "api-user", "id", "-u"); got != "1000\n" {
		t.Errorf("runs as %q", got)
	}
	token := f.exec(t, ns, "api-user", "cat", dir+"token") // as uid 1000
	if got := f.exec(t, ns, "api-user", "cat", dir+"namespace"); got != ns {
		t.Errorf("namespace file %q", got)
	}
	if got := f.exec(t, ns, "api-user", "cat", dir+"ca.crt"); got != string(f.cp.Config.CAData) {
		t.Errorf("ca.crt is not kube-root-ca.crt's")
	}
	tr, err := f.client.AuthenticationV1().TokenReviews().Create(t.Context(), &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	must(t, err)
	st := tr.Status
	if !st.Authenticated || st.User.Username != "system:serviceaccount:"+ns+":default" {
		t.Fatalf("TokenReview: %+v", st)
	}
	if got := st.User.Extra["authentication.kubernetes.io/pod-name"]; len(got) != 1 || got[0] != "api-user" {
		t.Errorf("the token is not bound to the pod: extra %v", st.User.Extra)
	}
}

// testLateConfigMap starts a Pod whose ConfigMap volume does not exist
// yet: it waits in ContainerCreating, naming the ConfigMap, and starts as
// soon as the ConfigMap is created.
func testLateConfigMap(t *testing.T, f *fixture) {
	ns := f.namespace(t, "late")
	pod := hostPod("patient", "sleep", "3600")
	pod.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "later"}}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
	f.create(t, ns, pod)
	p := f.waitPod(t, ns, "patient", "ContainerCreating", 20*time.Second, func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "ContainerCreating" && strings.Contains(w.Message, "later")
	})
	if p.Status.Phase != corev1.PodPending {
		t.Fatalf("status: %s", describe(p))
	}
	time.Sleep(1500 * time.Millisecond) // into the set-up back-off
	_, err := f.client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "later"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	must(t, err)
	start := time.Now()
	f.waitReady(t, ns, "patient")
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("ready %s after the ConfigMap appeared; the set-up should not wait out its back-off", d.Round(time.Millisecond))
	}
	if got := f.exec(t, ns, "patient", "cat", "/cfg/k"); got != "v" {
		t.Errorf("/cfg/k = %q", got)
	}
}
