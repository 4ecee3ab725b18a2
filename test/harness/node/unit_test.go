package node

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
)

// unitNode is a Node with no control plane, network or processes, for
// unit tests of its parts: a fake client holding objs, events recorded in
// memory, and a Pod ns/web (UID uid-1) whose one container is c (renamed
// "c"), known to the Node but not started.
func unitNode(t *testing.T, c corev1.Container, objs ...*corev1.Pod) (*Node, *pod, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset()
	for _, o := range objs {
		if err := client.Tracker().Add(o.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	n := &Node{
		cfg:    Config{NodeName: "node-a", Client: client, Dir: t.TempDir(), MaxGracePeriod: time.Second, Logf: t.Logf},
		pods:   map[string]*pod{},
		events: &eventSink{recorder: record.NewFakeRecorder(100)},
	}
	c.Name = "c"
	p := newPod(n, &corev1.Pod{
		ObjectMeta: webPodMeta,
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
	})
	n.pods[p.key] = p
	return n, p, client
}

// webPodMeta names the Pod of [unitNode].
var webPodMeta = metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"}
