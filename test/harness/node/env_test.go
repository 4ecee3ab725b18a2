package node_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/harness"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testEnv(t *testing.T, f *fixture) {
	ns := f.namespace(t, "env")
	ctx := t.Context()
	_, err := f.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data:       map[string]string{"color": "blue", "size": "L"},
	}, metav1.CreateOptions{})
	must(t, err)
	_, err = f.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		Data:       map[string][]byte{"password": []byte("s3cret")},
	}, metav1.CreateOptions{})
	must(t, err)
	web, err := f.client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web-front"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP},
			{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP},
		}},
	}, metav1.CreateOptions{})
	must(t, err)
	// kube-apiserver writes the kubernetes Service once it is ready, after
	// the default namespace that the control plane's start waited for.
	kubeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	kube, err := harness.PollGet(kubeCtx, f.client.CoreV1().Services("default").Get, "kubernetes")
	must(t, err)
	kubeIP, webIP := kube.Spec.ClusterIP, web.Spec.ClusterIP

	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	optional := true
	env := []corev1.EnvVar{
		{Name: "SECS", Value: "3600"},
		{Name: "POD_NAME", ValueFrom: field("metadata.name")},
		{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
		{Name: "POD_UID", ValueFrom: field("metadata.uid")},
		{Name: "POD_IP", ValueFrom: field("status.podIP")},
		{Name: "NODE_NAME", ValueFrom: field("spec.nodeName")},
		{Name: "SA_NAME", ValueFrom: field("spec.serviceAccountName")},
		{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "color"}}},
		{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
		{Name: "ABSENT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "nokey", Optional: &optional}}},
		{Name: "GREETING", Value: "hi $(POD_NAME) $(UNDEFINED) $$(POD_NAME) $(CFG_size)"},
	}
	no := false
	for _, tc := range []struct {
		name   string
		links  *bool
		absent []string
	}{
		{name: "links", links: nil},
		{name: "nolinks", links: &no, absent: []string{"WEB_FRONT_SERVICE_HOST", "WEB_FRONT_PORT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := hostPod(tc.name, "sleep", "$(SECS)")
			pod.Spec.EnableServiceLinks = tc.links
			pod.Spec.ServiceAccountName = "default"
			pod.Spec.Containers[0].Env = env
			pod.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
			created := f.create(t, ns, pod)
			p := f.waitReady(t, ns, tc.name)
			pid, ok := f.node.ContainerPID(ns, tc.name, "main")
			if !ok {
				t.Fatal("no container process")
			}
			got := procEnv(t, pid)
			want := map[string]string{
				"SECS": "3600", "POD_NAME": tc.name, "POD_NAMESPACE": ns, "POD_UID": string(created.UID),
				"POD_IP": p.Status.PodIP, "NODE_NAME": "node-a", "SA_NAME": "default",
				"COLOR": "blue", "PASSWORD": "s3cret", "CFG_color": "blue", "CFG_size": "L",
				"GREETING":                      "hi " + tc.name + " $(UNDEFINED) $(POD_NAME) L",
				"HOSTNAME":                      tc.name,
				"KUBERNETES_SERVICE_HOST":       kubeIP,
				"KUBERNETES_SERVICE_PORT":       "443",
				"KUBERNETES_SERVICE_PORT_HTTPS": "443",
				"KUBERNETES_PORT":               "tcp://" + kubeIP + ":443",
				"KUBERNETES_PORT_443_TCP":       "tcp://" + kubeIP + ":443",
				"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
				"KUBERNETES_PORT_443_TCP_PORT":  "443",
				"KUBERNETES_PORT_443_TCP_ADDR":  kubeIP,
			}
			if tc.links == nil {
				for k, v := range map[string]string{
					"WEB_FRONT_SERVICE_HOST":         webIP,
					"WEB_FRONT_SERVICE_PORT":         "80",
					"WEB_FRONT_SERVICE_PORT_HTTP":    "80",
					"WEB_FRONT_SERVICE_PORT_DNS_UDP": "53",
					"WEB_FRONT_PORT":                 "tcp://" + webIP + ":80",
					"WEB_FRONT_PORT_80_TCP_ADDR":     webIP,
					"WEB_FRONT_PORT_53_UDP":          "udp://" + webIP + ":53",
					"WEB_FRONT_PORT_53_UDP_PROTO":    "udp",
				} {
					want[k] = v
				}
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			for _, k := range append(tc.absent, "ABSENT") {
				if v, ok := got[k]; ok {
					t.Errorf("%s is set (%q)", k, v)
				}
			}
			cmdline, err := os.ReadFile("/proc/" + itoa(pid) + "/cmdline")
			must(t, err)
			if string(cmdline) != "sleep\x003600\x00" {
				t.Errorf("cmdline %q: $(SECS) not expanded", cmdline)
			}
		})
	}
}

// procEnv reads a process's environment from /proc.
func procEnv(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/environ")
	must(t, err)
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}
