package hairpin

import (
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// objectMeta is the identity that the informer store keys and versions a
// cached object by, and the labels when a label selector is checked. Cached
// objects embed it instead of meta.ObjectMeta, which alone is ~280 bytes
// per object; with 10,000 Ingresses that difference is megabytes. This is
// the kubernetes plugin's slim-object pattern.
type objectMeta struct {
	name, namespace, resourceVersion string
	uid                              types.UID
	generation                       int64
	labels                           map[string]string
}

// newObjectMeta keeps the identity of m, and its labels only when keepLabels.
func newObjectMeta(m meta.Object, keepLabels bool) objectMeta {
	om := objectMeta{name: m.GetName(), namespace: m.GetNamespace(), resourceVersion: m.GetResourceVersion(), uid: m.GetUID(), generation: m.GetGeneration()}
	if keepLabels {
		om.labels = m.GetLabels()
	}
	return om
}

// GetName implements meta.Object.
func (o *objectMeta) GetName() string { return o.name }

// GetNamespace implements meta.Object.
func (o *objectMeta) GetNamespace() string { return o.namespace }

// GetResourceVersion implements meta.Object.
func (o *objectMeta) GetResourceVersion() string { return o.resourceVersion }

// GetGeneration implements meta.Object.
func (o *objectMeta) GetGeneration() int64 { return o.generation }

// GetLabels implements meta.Object.
func (o *objectMeta) GetLabels() map[string]string { return o.labels }

// SetName implements meta.Object.
func (o *objectMeta) SetName(n string) { o.name = n }

// SetNamespace implements meta.Object.
func (o *objectMeta) SetNamespace(ns string) { o.namespace = ns }

// SetResourceVersion implements meta.Object.
func (o *objectMeta) SetResourceVersion(v string) { o.resourceVersion = v }

// SetGeneration implements meta.Object.
func (o *objectMeta) SetGeneration(g int64) { o.generation = g }

// SetLabels implements meta.Object.
func (o *objectMeta) SetLabels(l map[string]string) { o.labels = l }

// key is the informer store key, "namespace/name" or "name".
func (o *objectMeta) key() string {
	if o.namespace == "" {
		return o.name
	}
	return o.namespace + "/" + o.name
}

// GetObjectKind implements runtime.Object.
func (o *objectMeta) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// The rest of meta.Object: nothing that the store or our handlers read.

// GetGenerateName implements meta.Object.
func (o *objectMeta) GetGenerateName() string { return "" }

// SetGenerateName implements meta.Object.
func (o *objectMeta) SetGenerateName(string) {}

// GetUID implements meta.Object.
func (o *objectMeta) GetUID() types.UID { return o.uid }

// SetUID implements meta.Object.
func (o *objectMeta) SetUID(u types.UID) { o.uid = u }

// GetSelfLink implements meta.Object.
func (o *objectMeta) GetSelfLink() string { return "" }

// SetSelfLink implements meta.Object.
func (o *objectMeta) SetSelfLink(string) {}

// GetCreationTimestamp implements meta.Object.
func (o *objectMeta) GetCreationTimestamp() meta.Time { return meta.Time{} }

// SetCreationTimestamp implements meta.Object.
func (o *objectMeta) SetCreationTimestamp(meta.Time) {}

// GetDeletionTimestamp implements meta.Object.
func (o *objectMeta) GetDeletionTimestamp() *meta.Time { return nil }

// SetDeletionTimestamp implements meta.Object.
func (o *objectMeta) SetDeletionTimestamp(*meta.Time) {}

// GetDeletionGracePeriodSeconds implements meta.Object.
func (o *objectMeta) GetDeletionGracePeriodSeconds() *int64 { return nil }

// SetDeletionGracePeriodSeconds implements meta.Object.
func (o *objectMeta) SetDeletionGracePeriodSeconds(*int64) {}

// GetAnnotations implements meta.Object.
func (o *objectMeta) GetAnnotations() map[string]string { return nil }

// SetAnnotations implements meta.Object.
func (o *objectMeta) SetAnnotations(map[string]string) {}

// GetFinalizers implements meta.Object.
func (o *objectMeta) GetFinalizers() []string { return nil }

// SetFinalizers implements meta.Object.
func (o *objectMeta) SetFinalizers([]string) {}

// GetOwnerReferences implements meta.Object.
func (o *objectMeta) GetOwnerReferences() []meta.OwnerReference { return nil }

// SetOwnerReferences implements meta.Object.
func (o *objectMeta) SetOwnerReferences([]meta.OwnerReference) {}

// GetManagedFields implements meta.Object.
func (o *objectMeta) GetManagedFields() []meta.ManagedFieldsEntry { return nil }

// SetManagedFields implements meta.Object.
func (o *objectMeta) SetManagedFields([]meta.ManagedFieldsEntry) {}
