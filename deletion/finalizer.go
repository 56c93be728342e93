package deletion

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/gcscope/gcscope/gc"
)

// FinalizerOrigin says who added a finalizer to an object, from the object's
// managedFields, and whether that controller looks alive.
type FinalizerOrigin struct {
	Finalizer string       `json:"finalizer"`
	Object    gc.ObjectRef `json:"object"`
	// Manager is the field manager whose managedFields entry owns the finalizer, with
	// that entry's operation (Apply or Update), subresource and time. Empty when no entry
	// owns it (Unknown says why).
	Manager     string     `json:"manager,omitempty"`
	Operation   string     `json:"operation,omitempty"`
	Subresource string     `json:"subresource,omitempty"`
	Time        *time.Time `json:"time,omitempty"`
	Unknown     string     `json:"unknown,omitempty"`
	// Controller says whether the controller responsible looks alive.
	Controller Liveness `json:"controller"`
	// Risk is what removing the finalizer by hand would risk, in one line.
	Risk string `json:"risk"`
}

// Origin names the field manager that added finalizer f to ref, from its managedFields
// (one GET, never cached in the informers; shared by every reader for originTTL), then
// says whether its controller looks alive to this reader.
func (x *Explainer) Origin(ctx context.Context, ref gc.ObjectRef, f string, visible Visible) FinalizerOrigin {
	o, ok := x.origins.get(ctx, originKey{string(ref.UID), f}, func(ctx context.Context) FinalizerOrigin { return x.origin(ctx, ref, f) })
	if !ok {
		return FinalizerOrigin{Finalizer: f, Object: ref, Risk: riskOf(f), Unknown: "the look-up was cancelled",
			Controller: Liveness{State: Unknown, Says: "cannot tell: the look-up was cancelled"}}
	}
	o.Controller = x.controllerOf(ctx, o.Manager, f, ref.Namespace, visible)
	return o
}

// origin reads who added finalizer f (communicates with the server).
func (x *Explainer) origin(ctx context.Context, ref gc.ObjectRef, f string) FinalizerOrigin {
	o := FinalizerOrigin{Finalizer: f, Object: ref, Risk: riskOf(f)}
	entries, err := x.managedFields(ctx, ref)
	if err != nil {
		o.Unknown = "cannot read its managedFields: " + err.Error()
	} else if e, ok := ownerOfFinalizer(entries, f); ok {
		o.Manager, o.Operation, o.Subresource = e.Manager, string(e.Operation), e.Subresource
		if e.Time != nil {
			t := e.Time.Time
			o.Time = &t
		}
	} else {
		o.Unknown = "no managedFields entry owns it: the apiserver records no field manager for the updates of an object that had no managed field (one created with nothing it tracks, a name only), or its entries were reset"
	}
	return o
}

// managedFields GETs ref's metadata, with its managedFields.
func (x *Explainer) managedFields(ctx context.Context, ref gc.ObjectRef) ([]metav1.ManagedFieldsEntry, error) {
	obj, err := x.metadataOf(ctx, ref)
	if err != nil {
		return nil, err
	}
	return obj.ManagedFields, nil
}

// resourceOf is the metadata client of ref's resource (in its namespace).
func (x *Explainer) resourceOf(ref gc.ObjectRef) (metadata.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, err
	}
	m, err := x.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version)
	if err != nil {
		return nil, err
	}
	if ref.Namespace != "" {
		return x.metadata.Resource(m.Resource).Namespace(ref.Namespace), nil
	}
	return x.metadata.Resource(m.Resource), nil
}

// ownerOfFinalizer finds the managedFields entry that owns finalizer f: its fieldsV1 set
// holds f:metadata → f:finalizers → v:"f". When several do (each applied it), the most
// recent.
func ownerOfFinalizer(entries []metav1.ManagedFieldsEntry, f string) (metav1.ManagedFieldsEntry, bool) {
	key, _ := json.Marshal(f)
	want := "v:" + string(key)
	var found metav1.ManagedFieldsEntry
	ok := false
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		var set struct {
			Metadata struct {
				Finalizers map[string]json.RawMessage `json:"f:finalizers"`
			} `json:"f:metadata"`
		}
		if json.Unmarshal(e.FieldsV1.Raw, &set) != nil {
			continue
		}
		if _, has := set.Metadata.Finalizers[want]; !has {
			continue
		}
		if !ok || e.Time != nil && found.Time != nil && e.Time.After(found.Time.Time) {
			found, ok = e, true
		}
	}
	return found, ok
}

// riskOf says in one line what removing finalizer f by hand would risk.
func riskOf(f string) string {
	switch {
	case f == namespaceFinalizer:
		return "the content left stays in etcd without its namespace, and reappears in a new namespace of the same name"
	case f == "kubernetes.io/pvc-protection" || f == "kubernetes.io/pv-protection":
		return "the volume can go while a Pod still uses it: data loss for that Pod"
	case strings.HasPrefix(f, "external-attacher/"):
		return "the volume may stay attached to its node with no object left to detach it"
	}
	return "a running controller may put it back (or fail on the missing object), and what it cleans up outside the object (cloud resources, storage, DNS…) may be left behind"
}
