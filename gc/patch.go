package gc

import (
	"encoding/json"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Patch bodies. Strategic merge patches name the object's uid, which the apiserver checks
// against the stored one (a mismatch answers 422): a patch meant for one incarnation of
// a name never lands on the next. JSON merge patches, for custom resources that do not
// take strategic ones, carry the resourceVersion they were computed from instead.

// deleteOwnerRefStrategicMergePatch removes the ownerReferences to ownerUIDs.
func deleteOwnerRefStrategicMergePatch(dependentUID types.UID, ownerUIDs ...types.UID) []byte {
	refs := make([]map[string]string, len(ownerUIDs))
	for i, uid := range ownerUIDs {
		refs[i] = map[string]string{"$patch": "delete", "uid": string(uid)}
	}
	return mustJSON(map[string]any{"metadata": map[string]any{"uid": dependentUID, "ownerReferences": refs}})
}

// unblockOwnerRefsStrategicMergePatch sets blockOwnerDeletion=false on blocking, which
// must not be empty: a null list would delete every reference.
func unblockOwnerRefsStrategicMergePatch(uid types.UID, blocking []metav1.OwnerReference) []byte {
	return mustJSON(map[string]any{"metadata": map[string]any{"uid": uid, "ownerReferences": unblocked(blocking)}})
}

// ownerRefsJSONMergePatch replaces the whole ownerReferences list, guarded by the
// resourceVersion it was computed from.
func ownerRefsJSONMergePatch(obj *metav1.PartialObjectMetadata, refs []metav1.OwnerReference) []byte {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	return mustJSON(map[string]any{"metadata": map[string]any{
		"ownerReferences": refs, "resourceVersion": obj.ResourceVersion, "uid": obj.UID,
	}})
}

// finalizersJSONMergePatch replaces the finalizers list, guarded by resourceVersion.
func finalizersJSONMergePatch(obj *metav1.PartialObjectMetadata, finalizers []string) []byte {
	if finalizers == nil {
		finalizers = []string{}
	}
	return mustJSON(map[string]any{"metadata": map[string]any{
		"finalizers": finalizers, "resourceVersion": obj.ResourceVersion, "uid": obj.UID,
	}})
}

// withoutOwners returns refs minus those to uids.
func withoutOwners(refs []metav1.OwnerReference, uids ...types.UID) []metav1.OwnerReference {
	return slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return slices.Contains(uids, r.UID) })
}

// unblocked returns refs with blockOwnerDeletion cleared.
func unblocked(refs []metav1.OwnerReference) []metav1.OwnerReference {
	out := slices.Clone(refs)
	for i := range out {
		if isBlocking(out[i]) {
			out[i].BlockOwnerDeletion = ptr.To(false)
		}
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps, strings and ownerReferences: always encodable
	}
	return b
}
