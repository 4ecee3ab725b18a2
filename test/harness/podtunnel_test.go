package harness_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-hairpin/hairpin/test/harness"
)

// TestPodTunnelCarriesThePodProxy: kube-apiserver's pods/proxy reaches a
// routed pod address through the network, and an unrouted one fails as an
// unreachable pod does.
func TestPodTunnelCarriesThePodProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd")
	}
	pn := harness.StartPodTunnel(t)
	cp := harness.NewControlPlane(t, harness.ControlPlaneOptions{APIServerFlags: pn.APIServerFlags()})
	ctx := ctxTimeout(t, time.Minute)
	pods := cp.Clientset.CoreV1().Pods("default")
	for i, name := range []string{"routed", "unrouted"} {
		pod, err := pods.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "none"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ip := fmt.Sprintf("198.18.0.%d", 10+i)
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
		if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pn.Serve(t, "198.18.0.10:9153", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "path %s", r.URL.Path)
	}))

	got, err := pods.ProxyGet("http", "routed", "9153", "metrics", nil).DoRaw(ctx)
	if err != nil || string(got) != "path /metrics" {
		t.Fatalf("GET pods/routed:9153/proxy/metrics = %q, %v; want %q", got, err, "path /metrics")
	}
	_, err = pods.ProxyGet("http", "unrouted", "9153", "metrics", nil).DoRaw(ctx)
	if !apierrors.IsServiceUnavailable(err) && !strings.Contains(fmt.Sprint(err), "502") {
		t.Fatalf("GET pods/unrouted:9153/proxy/metrics: %v; want the apiserver's error for an unreachable pod", err)
	}
}
