package node_test

import (
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// testLifecycle runs a postStart command in the container and a preStop
// HTTP GET to a server of the test in the node's namespace, which must see
// it before the Pod is gone.
func testLifecycle(t *testing.T, f *fixture) {
	ns := f.namespace(t, "hooks")
	l, err := f.nodeNS.Listen("tcp", nodeIP.String()+":0")
	must(t, err)
	hit := make(chan string, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case hit <- r.URL.Path:
		default:
		}
	})}
	go srv.Serve(l)
	defer srv.Close()
	port := l.Addr().(*net.TCPAddr).Port

	pod := hostPod("hooked", "sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.1; done")
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo started > /tmp/hook"}}},
		PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
			Host: nodeIP.String(), Port: intstr.FromInt32(int32(port)), Path: "/prestop"}},
	}
	f.create(t, ns, pod)
	f.waitReady(t, ns, "hooked")
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _, _ := f.node.Exec(t.Context(), ns, "hooked", "main", "cat", "/tmp/hook")
		if out == "started\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("postStart did not run: /tmp/hook = %q", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	must(t, f.client.CoreV1().Pods(ns).Delete(t.Context(), "hooked", metav1.DeleteOptions{}))
	select {
	case path := <-hit:
		if path != "/prestop" {
			t.Errorf("preStop requested %q", path)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no preStop request within 5s of the deletion (port " + strconv.Itoa(port) + ")")
	}
}
