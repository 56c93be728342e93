package gc

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Builders of the objects, owner references and graph events the engine's unit tests feed it.

// testDeletionTime is the deletionTimestamp of every object a test deletes.
var testDeletionTime = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

type objOption func(*metav1.PartialObjectMetadata)

func owned(refs ...metav1.OwnerReference) objOption {
	return func(o *metav1.PartialObjectMetadata) { o.OwnerReferences = refs }
}

func finalized(finalizers ...string) objOption {
	return func(o *metav1.PartialObjectMetadata) { o.Finalizers = finalizers }
}

func deleting() objOption {
	return func(o *metav1.PartialObjectMetadata) {
		t := testDeletionTime
		o.DeletionTimestamp = &t
	}
}

func testObject(apiVersion, kind, ns, name string, uid types.UID, opts ...objOption) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid},
	}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

func deployment(ns, name string, uid types.UID, opts ...objOption) *metav1.PartialObjectMetadata {
	return testObject("apps/v1", "Deployment", ns, name, uid, opts...)
}

func replicaSet(ns, name string, uid types.UID, opts ...objOption) *metav1.PartialObjectMetadata {
	return testObject("apps/v1", "ReplicaSet", ns, name, uid, opts...)
}

func pod(ns, name string, uid types.UID, opts ...objOption) *metav1.PartialObjectMetadata {
	return testObject("v1", "Pod", ns, name, uid, opts...)
}

func configMap(ns, name string, uid types.UID, opts ...objOption) *metav1.PartialObjectMetadata {
	return testObject("v1", "ConfigMap", ns, name, uid, opts...)
}

// changed returns a copy of obj with opts applied: the new state of an update.
func changed(obj *metav1.PartialObjectMetadata, opts ...objOption) *metav1.PartialObjectMetadata {
	c := obj.DeepCopy()
	for _, opt := range opts {
		opt(c)
	}
	return c
}

type refOption func(*metav1.OwnerReference)

func blocking(r *metav1.OwnerReference) { r.BlockOwnerDeletion = ptr.To(true) }

func notBlocking(r *metav1.OwnerReference) { r.BlockOwnerDeletion = ptr.To(false) }

func controls(r *metav1.OwnerReference) { r.Controller = ptr.To(true) }

// ownerRefTo is a reference to obj, with the coordinates obj has.
func ownerRefTo(obj *metav1.PartialObjectMetadata, opts ...refOption) metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: obj.APIVersion, Kind: obj.Kind, Name: obj.Name, UID: obj.UID}
	for _, opt := range opts {
		opt(&r)
	}
	return r
}

// identityOf is obj's identity as the graph keeps it.
func identityOf(obj *metav1.PartialObjectMetadata) objectReference {
	return objectReference{
		OwnerReference: metav1.OwnerReference{APIVersion: obj.APIVersion, Kind: obj.Kind, Name: obj.Name, UID: obj.UID},
		Namespace:      obj.Namespace,
	}
}

// identity is an identity built from coordinates, such as the one a dependent gives its owner.
func refIdentity(apiVersion, kind, ns, name string, uid types.UID) objectReference {
	return objectReference{
		OwnerReference: metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid},
		Namespace:      ns,
	}
}

func gvkOf(obj *metav1.PartialObjectMetadata) schema.GroupVersionKind {
	return obj.GroupVersionKind()
}

func evAdd(obj *metav1.PartialObjectMetadata) *event {
	return &event{eventType: addEvent, obj: obj, gvk: gvkOf(obj)}
}

func evUpdate(old, obj *metav1.PartialObjectMetadata) *event {
	return &event{eventType: updateEvent, obj: obj, oldObj: old, gvk: gvkOf(obj)}
}

func evDelete(obj *metav1.PartialObjectMetadata) *event {
	return &event{eventType: deleteEvent, obj: obj, gvk: gvkOf(obj)}
}

// evVirtualDelete is what a worker enqueues when it finds ref absent
// (enqueueVirtualDeleteEvent).
func evVirtualDelete(ref objectReference) *event {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return &event{
		virtual:   true,
		eventType: deleteEvent,
		gvk:       gv.WithKind(ref.Kind),
		obj: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID,
		}},
	}
}
