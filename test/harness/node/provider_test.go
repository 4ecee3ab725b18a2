package node

import (
	"testing"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDeletePodDeletesTheObjectOnceThePodEnds calls DeletePod as
// virtual-kubelet does: once for the deletion, and again for every update
// of the Pod while it is being deleted, which can come while the Pod's
// goroutine ends (under -race, an unguarded read of the deletion there is
// reported). A deletion, once seen, deletes the object; a stop that is no
// deletion (the node's) leaves it.
func TestDeletePodDeletesTheObjectOnceThePodEnds(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name        string
		deletions   []*metav1.Time // DeletionTimestamp of each DeletePod call
		wantDeleted bool
	}{
		{name: "OneDeletion", deletions: []*metav1.Time{&now}, wantDeleted: true},
		{name: "DeletionRepeatedWhileThePodEnds", deletions: []*metav1.Time{&now, &now, &now}, wantDeleted: true},
		{name: "LaterCallWithoutATimestampKeepsTheDeletion", deletions: []*metav1.Time{&now, nil}, wantDeleted: true},
		{name: "StopThatIsNoDeletionKeepsTheObject", deletions: []*metav1.Time{nil}, wantDeleted: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &corev1.Pod{ObjectMeta: webPodMeta}
			n, p, client := unitNode(t, corev1.Container{}, obj)
			reported := make(chan struct{})
			go p.reporter(reported)
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				p.end(reported)
			}()

			pr := &provider{n: n}
			for i, ts := range tc.deletions {
				del := obj.DeepCopy()
				del.DeletionTimestamp = ts
				// A later call may come after the Pod has ended: not
				// found, which virtual-kubelet takes as done.
				if err := pr.DeletePod(t.Context(), del); err != nil && (i == 0 || !errdefs.IsNotFound(err)) {
					t.Fatalf("DeletePod %d: %v", i, err)
				}
			}
			select {
			case <-ended: // the object's deletion, if any, has been sent
			case <-time.After(10 * time.Second):
				t.Fatal("the Pod did not end after DeletePod")
			}
			_, err := client.CoreV1().Pods("ns").Get(t.Context(), "web", metav1.GetOptions{})
			if deleted := apierrors.IsNotFound(err); deleted != tc.wantDeleted {
				t.Fatalf("Pod object deleted: %v (get: %v), want %v", deleted, err, tc.wantDeleted)
			}
		})
	}
}
