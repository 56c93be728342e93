package gc

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Decisions from the graph's view. Upstream reads the item and each owner from the
// apiserver before every decision (two requests per collected object in a Background
// cascade, three in a Foreground one). gcscope decides from what its informers observed
// where the graph knows: the item's own metadata, and an owner it observed (present, being
// deleted, waiting for its dependents) or saw deleted. A view can be stale, never wrong
// for long: every write built on it carries the view's uid and resourceVersion, so a
// change the informer has not delivered yet earns a 409 (or 422) and the item is decided
// again. Virtual nodes, owners never observed and owners named under other coordinates
// are still read from the apiserver.

// observedMetadata is the graph's view of the observed object ref, as a GET would return
// it; false when its node is virtual or no longer in the graph.
func (gc *GarbageCollector) observedMetadata(ref objectReference) (*metav1.PartialObjectMetadata, bool) {
	gc.graph.mu.RLock()
	defer gc.graph.mu.RUnlock()
	current, ok := gc.graph.read(ref.UID)
	if !ok || current.virtual || current.identity != ref {
		return nil, false
	}
	return current.metadata(), true
}

// observedOwner is the graph's view of the owner ref names, looked for in namespace ("" for
// cluster-scoped): found only when the graph observed an object of that uid under exactly
// those coordinates (same kind and group, name and namespace). A reference through another
// version of the group names the same object.
func (gc *GarbageCollector) observedOwner(ref metav1.OwnerReference, namespace string) (*metav1.PartialObjectMetadata, bool) {
	gc.graph.mu.RLock()
	defer gc.graph.mu.RUnlock()
	n, ok := gc.graph.read(ref.UID)
	if !ok || n.virtual || n.identity.Kind != ref.Kind || n.identity.Name != ref.Name || n.identity.Namespace != namespace {
		return nil, false
	}
	observedGV, err1 := schema.ParseGroupVersion(n.identity.APIVersion)
	refGV, err2 := schema.ParseGroupVersion(ref.APIVersion)
	if err1 != nil || err2 != nil || observedGV.Group != refGV.Group {
		return nil, false
	}
	return n.metadata(), true
}

// metadata is n's last observation. Requires graph.mu held.
func (n *node) metadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: n.identity.Name, Namespace: n.identity.Namespace, UID: n.identity.UID,
		ResourceVersion: n.resourceVersion,
		OwnerReferences: slices.Clone(n.owners),
		Finalizers:      slices.Clone(n.finalizers),
	}}
	if n.deletionTimestamp != nil {
		t := metav1.NewTime(*n.deletionTimestamp)
		m.DeletionTimestamp = &t
	}
	return m
}
