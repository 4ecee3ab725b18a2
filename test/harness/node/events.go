package node

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// eventSink records Events about Pods (Started, Killing, Unhealthy, ...) in
// the apiserver, from the node's component, as kubelet does.
type eventSink struct {
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
}

func newEventSink(client kubernetes.Interface, node string) *eventSink {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return &eventSink{
		broadcaster: b,
		recorder:    b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: node}),
	}
}

func (e *eventSink) stop() { e.broadcaster.Shutdown() }
