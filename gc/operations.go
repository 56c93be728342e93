package gc

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"
)

// The API verbs of the workers. Each one communicates with the apiserver, records an
// Action on the feed with its result, and in shadow mode records what it would have
// written without writing.

// apiResource maps an apiVersion and kind to its resource and scope.
func (gc *GarbageCollector) apiResource(apiVersion, kind string) (schema.GroupVersionResource, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false, &restMappingError{kind: kind, version: apiVersion}
	}
	mapping, err := gc.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, &restMappingError{kind: kind, version: apiVersion}
	}
	return mapping.Resource, mapping.Scope == meta.RESTScopeNamespace, nil
}

func (gc *GarbageCollector) resourceClient(ref objectReference) (metadata.ResourceInterface, error) {
	gvr, namespaced, err := gc.apiResource(ref.APIVersion, ref.Kind)
	if err != nil {
		return nil, err
	}
	if namespaced {
		if ref.Namespace == "" {
			// A namespaced kind with no namespace: only a cluster-scoped object naming a
			// namespaced owner leads here. Looking it up cluster-wide would "prove" it
			// absent and get its dependents collected.
			return nil, errNamespacedOwnerOfClusterScopedObject
		}
		return gc.metadata.Resource(gvr).Namespace(ref.Namespace), nil
	}
	return gc.metadata.Resource(gvr), nil
}

// record publishes an action and counts it.
func (gc *GarbageCollector) record(a Action, start time.Time, err error) {
	if !start.IsZero() {
		a.Duration = time.Since(start)
	}
	result := "ok"
	switch {
	case err != nil:
		a.Error, a.ErrorReason = err.Error(), string(apierrors.ReasonForError(err))
		result = "error"
	case a.Shadow:
		result = "shadow"
	}
	gc.metrics.actions.WithLabelValues(string(a.Queue), string(a.Verb), result).Inc()
	gc.feed.publish(Event{Type: ActionTaken, Action: &a})
	if gc.shadow != nil && (a.Shadow || a.Verb == VerbKeep) && a.Verb != VerbWarn {
		// A warning is no decision on the object (and is recorded under the graph's lock).
		gc.recordShadow(a)
	}
}

// getObject reads the live metadata of ref (a read: done in shadow mode too).
// forItem, when set, is the item whose processing made the look-up (an owner's look-up is
// made for its dependent); why names it.
func (gc *GarbageCollector) getObject(ctx context.Context, q QueueName, ref objectReference, why string, forItem *ObjectRef) (*metav1.PartialObjectMetadata, error) {
	start := time.Now()
	client, err := gc.resourceClient(ref)
	if err != nil {
		return nil, err
	}
	obj, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
	var rerr error
	if err != nil && !apierrors.IsNotFound(err) {
		rerr = err
	}
	reason := why
	switch {
	case apierrors.IsNotFound(err):
		reason += ": not found"
	case err == nil && obj.UID != ref.UID:
		reason += fmt.Sprintf(": found uid %s instead", obj.UID)
	}
	gc.record(Action{Queue: q, Verb: VerbGet, Object: refOf(ref), Reason: reason, For: forItem}, start, rerr)
	return obj, err
}

// beforeWrite applies the slow-motion delay and reports whether to actually write.
func (gc *GarbageCollector) beforeWrite(ctx context.Context) (write bool, err error) {
	if gc.opts.Mode == ModeShadow {
		return false, nil
	}
	if d := gc.opts.ActionDelay; d > 0 && gc.slowMotion.Load() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return true, nil
}

// write performs one write of a worker: after the slow-motion delay, do runs against
// ref's resource (in shadow mode it does not run at all); either way the action is
// recorded on the feed with its result.
func (gc *GarbageCollector) write(ctx context.Context, a *Action, ref objectReference, do func(metadata.ResourceInterface) error) error {
	proceed, err := gc.beforeWrite(ctx)
	if !proceed {
		a.Shadow = err == nil
		gc.record(*a, time.Time{}, err)
		return err
	}
	start := time.Now()
	client, err := gc.resourceClient(ref)
	if err == nil {
		err = do(client)
	}
	gc.record(*a, start, err)
	return err
}

// deleteObject deletes ref with policy, preconditioned on its uid and the resourceVersion
// the decision was made on. If only the resourceVersion moved and the ownerReferences the
// decision rested on did not, the delete is retried with the uid precondition alone.
//
// An object found gone (404) is not an error: as upstream, a virtual delete event is queued,
// so the graph lets go of it even if its informer missed the deletion, and the item is
// forgotten (errEnqueuedVirtualDeleteEvent).
func (gc *GarbageCollector) deleteObject(ctx context.Context, q QueueName, ref objectReference, latest *metav1.PartialObjectMetadata, policy metav1.DeletionPropagation, why string) error {
	a := Action{Queue: q, Verb: VerbDelete, Object: refOf(ref), Policy: string(policy), Reason: why}
	gone := false
	err := gc.write(ctx, &a, ref, func(client metadata.ResourceInterface) error {
		uid := ref.UID
		pre := metav1.Preconditions{UID: &uid}
		if latest.ResourceVersion != "" {
			rv := latest.ResourceVersion
			pre.ResourceVersion = &rv
		}
		opts := metav1.DeleteOptions{Preconditions: &pre, PropagationPolicy: &policy}
		err := client.Delete(ctx, ref.Name, opts)
		if apierrors.IsConflict(err) && pre.ResourceVersion != nil {
			live, lerr := client.Get(ctx, ref.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(lerr), lerr == nil && live.UID != ref.UID:
				err, gone = nil, true // already gone (the name may have a new object)
			case lerr == nil && reflect.DeepEqual(live.OwnerReferences, latest.OwnerReferences) &&
				live.DeletionTimestamp == nil && slices.Equal(live.Finalizers, latest.Finalizers):
				// Upstream retries on the ownerReferences alone. gcscope's view can be older
				// (the graph's, not a GET's), so it retries only if nothing its policy rests on
				// moved either: a delete the user has started since (an Orphan, say) is not
				// overridden by the collector's.
				pre.ResourceVersion = nil
				err = client.Delete(ctx, ref.Name, opts)
			}
		}
		if apierrors.IsNotFound(err) {
			gone = true
			return nil
		}
		return err
	})
	if gone && err == nil {
		gc.builder.enqueueVirtualDeleteEvent(ref)
		return errEnqueuedVirtualDeleteEvent
	}
	return err
}

// patch sends a strategic merge patch, falling back, for custom resources that answer
// 415, to the JSON merge patch fallback builds from the live object. It returns the
// patched object (nil in shadow mode).
func (gc *GarbageCollector) patch(ctx context.Context, a Action, ref objectReference, smp []byte, fallback func(*metav1.PartialObjectMetadata) []byte) (*metav1.PartialObjectMetadata, error) {
	var patched *metav1.PartialObjectMetadata
	err := gc.write(ctx, &a, ref, func(client metadata.ResourceInterface) error {
		var err error
		patched, err = client.Patch(ctx, ref.Name, types.StrategicMergePatchType, smp, metav1.PatchOptions{})
		if !apierrors.IsUnsupportedMediaType(err) {
			return err
		}
		a.Reason += " (JSON merge patch: no strategic merge for this kind)"
		live, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			return err
		case live.UID != ref.UID:
			return apierrors.NewNotFound(schema.GroupResource{Resource: ref.Kind}, ref.Name)
		}
		patched, err = client.Patch(ctx, ref.Name, types.MergePatchType, fallback(live), metav1.PatchOptions{})
		return err
	})
	return patched, err
}

// removeFinalizer removes finalizer from ref: one patch built from the graph's view
// (guarded by its uid and resourceVersion), or, when that view is stale, re-reading the
// object on each conflict. Absent object or finalizer: nothing to do.
func (gc *GarbageCollector) removeFinalizer(ctx context.Context, q QueueName, ref objectReference, finalizer, why string) error {
	a := Action{Queue: q, Verb: VerbRemoveFinalizer, Object: refOf(ref), Finalizer: finalizer, Reason: why}
	return gc.write(ctx, &a, ref, func(client metadata.ResourceInterface) error {
		if view, ok := gc.observedMetadata(ref); ok && slices.Contains(view.Finalizers, finalizer) {
			rest := slices.DeleteFunc(slices.Clone(view.Finalizers), func(f string) bool { return f == finalizer })
			_, err := client.Patch(ctx, ref.Name, types.MergePatchType, finalizersJSONMergePatch(view, rest), metav1.PatchOptions{})
			switch {
			case err == nil, apierrors.IsNotFound(err):
				return nil
			case !apierrors.IsConflict(err) && !apierrors.IsInvalid(err):
				return err
			}
			// Stale view (409), or the name now holds another object (422: uid): read it.
		}
		return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			live, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || (err == nil && live.UID != ref.UID) {
				return nil
			}
			if err != nil {
				return err
			}
			if !slices.Contains(live.Finalizers, finalizer) {
				return nil
			}
			rest := slices.DeleteFunc(slices.Clone(live.Finalizers), func(f string) bool { return f == finalizer })
			_, err = client.Patch(ctx, ref.Name, types.MergePatchType, finalizersJSONMergePatch(live, rest), metav1.PatchOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	})
}

// orphanDependents removes the reference to owner from every dependent, in parallel, and
// marks each dependent it patched (controller: whether its reference was the controller
// one). Dependents already gone are fine.
func (gc *GarbageCollector) orphanDependents(ctx context.Context, owner objectReference, dependents []objectReference, controller []bool) error {
	errs := make([]error, len(dependents))
	var wg sync.WaitGroup
	for i, dep := range dependents {
		wg.Go(func() {
			a := Action{Queue: AttemptToOrphan, Verb: VerbOrphan, Object: refOf(dep), Refs: []types.UID{owner.UID},
				Reason: "owner " + owner.Kind + " " + owner.Name + " is deleted with the orphan policy"}
			patched, err := gc.patch(ctx, a, dep, deleteOwnerRefStrategicMergePatch(dep.UID, owner.UID), func(live *metav1.PartialObjectMetadata) []byte {
				return ownerRefsJSONMergePatch(live, withoutOwners(live.OwnerReferences, owner.UID))
			})
			switch {
			case err != nil && !apierrors.IsNotFound(err):
				errs[i] = fmt.Errorf("orphaning %s: %w", dep, err)
			case err == nil && patched != nil: // written (not shadow mode, not gone)
				ref := owner.OwnerReference
				ref.Controller = &controller[i]
				gc.markRemovedRefs(dep.UID, []metav1.OwnerReference{ref}, func(metav1.OwnerReference) OrphanCause { return OrphanDelete })
			}
		})
	}
	wg.Wait()
	return utilerrors.NewAggregate(errs)
}
