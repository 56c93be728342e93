package gc

// The attemptToDelete worker: it decides, for one object, whether its owners are gone
// (delete it), still there (keep it) or being deleted in the foreground (wait), as
// upstream's attemptToDeleteItem does, and carries out foreground deletions.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

type workQueueItemAction int

const (
	forgetItem workQueueItemAction = iota
	requeueItem
)

func (gc *GarbageCollector) runAttemptToDeleteWorker(ctx context.Context) {
	for gc.processAttemptToDeleteWorker(ctx) {
	}
}

func (gc *GarbageCollector) processAttemptToDeleteWorker(ctx context.Context) bool {
	item, quit := gc.attemptToDelete.Get()
	if quit {
		return false
	}
	defer gc.attemptToDelete.Done(item)
	switch gc.attemptToDeleteWorker(ctx, item) {
	case forgetItem:
		gc.attemptToDelete.Forget(item)
	case requeueItem:
		gc.attemptToDelete.AddRateLimited(item)
	}
	return true
}

func (gc *GarbageCollector) attemptToDeleteWorker(ctx context.Context, item *node) workQueueItemAction {
	gc.graph.mu.RLock()
	current, inGraph := gc.graph.read(item.identity.UID)
	stale := item.virtual && (!inGraph || !current.virtual)
	gc.graph.mu.RUnlock()
	if stale {
		// A requeued virtual node whose object has since been observed (or removed): the
		// graph's own node carries on.
		return forgetItem
	}

	err := gc.attemptToDeleteItem(ctx, item)
	var mappingErr *restMappingError
	switch {
	case errors.Is(err, errEnqueuedVirtualDeleteEvent):
		return forgetItem // the graph builder takes it from here
	case errors.Is(err, errNamespacedOwnerOfClusterScopedObject):
		// Retrying cannot fix it; nothing else is done with the item (as upstream's worker).
		return forgetItem
	case ctx.Err() != nil:
		return forgetItem
	case errors.As(err, &mappingErr):
		gc.requeue(AttemptToDelete, item, mappingErr.Message())
		return requeueItem
	case err != nil:
		gc.requeue(AttemptToDelete, item, err.Error())
		return requeueItem
	}
	gc.graph.mu.RLock()
	virtual := item.virtual
	gc.graph.mu.RUnlock()
	if virtual {
		// Not observed through an informer yet: check again later, or a virtual node for
		// an object created and deleted while a watch was down could stay forever.
		gc.requeue(AttemptToDelete, item, "exists but not observed by a monitor yet")
		return requeueItem
	}
	return forgetItem
}

func (gc *GarbageCollector) requeue(q QueueName, item *node, why string) {
	gc.record(Action{Queue: q, Verb: VerbRequeue, Object: refOf(item.identity), Reason: why}, time.Time{}, nil)
}

func (gc *GarbageCollector) keep(item *node, why string) {
	gc.record(Action{Queue: AttemptToDelete, Verb: VerbKeep, Object: refOf(item.identity), Reason: why}, time.Time{}, nil)
}

// itemView is what a worker needs of a node, copied under the graph lock.
type itemView struct {
	beingDeleted, deletingDependents bool
	dependents                       int
	anyDependentDeletingDependents   bool
	// idle blockers: blocking dependents that are not deleting dependents themselves.
	blockers, idleBlockers []*node
}

func (gc *GarbageCollector) view(n *node) itemView {
	gc.graph.mu.RLock()
	defer gc.graph.mu.RUnlock()
	v := itemView{beingDeleted: n.beingDeleted, deletingDependents: n.deletingDependents, dependents: len(n.dependents)}
	for d := range n.dependents {
		if d.deletingDependents {
			v.anyDependentDeletingDependents = true
		}
	}
	v.blockers = n.blockingDependents()
	for _, d := range v.blockers {
		if !d.deletingDependents {
			v.idleBlockers = append(v.idleBlockers, d)
		}
	}
	return v
}

// attemptToDeleteItem decides the fate of one item, as upstream: it communicates with the
// apiserver and may delete or patch the item.
func (gc *GarbageCollector) attemptToDeleteItem(ctx context.Context, item *node) error {
	v := gc.view(item)
	// Being deleted is a one-way trip: wait for the final deletion, whose event queues
	// the dependents.
	if v.beingDeleted && !v.deletingDependents {
		gc.keep(item, "being deleted; waiting for its other finalizers")
		return nil
	}
	latest, observed := gc.observedMetadata(item.identity)
	var err error
	if !observed {
		gc.graph.mu.RLock()
		virtual := item.virtual
		gc.graph.mu.RUnlock()
		if !virtual {
			return nil // an observed item that left the graph: its delete was seen
		}
		latest, err = gc.getObject(ctx, AttemptToDelete, item.identity, "verify the item", nil)
	}
	switch {
	case apierrors.IsNotFound(err):
		// Virtual nodes of owners that do not exist leave the graph this way.
		gc.builder.enqueueVirtualDeleteEvent(item.identity)
		return errEnqueuedVirtualDeleteEvent
	case err != nil:
		return err
	case latest.UID != item.identity.UID:
		gc.builder.enqueueVirtualDeleteEvent(item.identity)
		return errEnqueuedVirtualDeleteEvent
	}

	if v.deletingDependents {
		return gc.processDeletingDependentsItem(ctx, item, v)
	}

	refs := latest.OwnerReferences
	if len(refs) == 0 {
		gc.keep(item, "has no owners")
		return nil
	}
	solid, dangling, waiting, err := gc.classifyReferences(ctx, item, refs, true)
	if err != nil {
		return err
	}
	if len(solid) > 0 && (len(dangling) > 0 || len(waiting) > 0) {
		// The patch below rests on the solid owners still being there, which the graph
		// learns only when their delete events arrive: ask the apiserver about them, as
		// upstream does, so that a dependent of owners deleted together is deleted as it
		// stands rather than first stripped of the references to the ones that went first.
		// (Absent and waiting owners stay as classified: both are one-way.)
		stillSolid, nowDangling, nowWaiting, err := gc.classifyReferences(ctx, item, solid, false)
		if err != nil {
			return err
		}
		solid, dangling, waiting = stillSolid, append(dangling, nowDangling...), append(waiting, nowWaiting...)
	}
	switch {
	case len(solid) > 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			gc.keep(item, ownersExist(refNames(solid)))
			return nil
		}
		// Keep the object for its solid owners, but drop the references to absent owners,
		// and to owners waiting for their dependents, which would otherwise wait forever.
		uids := append(refUIDs(dangling), refUIDs(waiting)...)
		a := Action{Queue: AttemptToDelete, Verb: VerbRemoveRefs, Object: refOf(item.identity), Refs: uids,
			Reason: removeRefsReason(solid, append(dangling, waiting...))}
		patched, err := gc.patch(ctx, a, item.identity, deleteOwnerRefStrategicMergePatch(item.identity.UID, uids...),
			func(live *metav1.PartialObjectMetadata) []byte {
				return ownerRefsJSONMergePatch(live, withoutOwners(live.OwnerReferences, uids...))
			})
		if err == nil && patched != nil { // written (not shadow mode)
			gc.markRemovedRefs(item.identity.UID, append(slices.Clone(dangling), waiting...), removedCause(dangling))
		}
		return err

	case len(waiting) > 0 && v.dependents > 0:
		if blocking := blockingRefs(refs); v.anyDependentDeletingDependents && len(blocking) > 0 {
			// A dependent of this item also waits for its dependents: there may be a cycle.
			// Stop this item blocking its owners first, so no one waits on anyone forever.
			a := Action{Queue: AttemptToDelete, Verb: VerbUnblock, Object: refOf(item.identity), Refs: refUIDs(blocking),
				Reason: "a dependent is itself deleting its dependents: unblocking owners to break a possible cycle"}
			_, err := gc.patch(ctx, a, item.identity, unblockOwnerRefsStrategicMergePatch(item.identity.UID, blocking),
				func(live *metav1.PartialObjectMetadata) []byte {
					return ownerRefsJSONMergePatch(live, unblocked(live.OwnerReferences))
				})
			if err != nil {
				return err
			}
			// As upstream, the delete below still carries the resourceVersion (and the
			// ownerReferences) the decision was made on: the patch changed both, so it
			// earns a 409 and the item is decided again on the patched object, usually
			// ending in a Background delete once the waiting owner is gone.
		}
		// Its owner waits for it, and it has dependents of its own: delete it in the
		// foreground too, so the wait extends down the chain.
		return gc.deleteObject(ctx, AttemptToDelete, item.identity, latest, metav1.DeletePropagationForeground,
			plural(len(waiting), "owner ", "owners ")+listWords(refNames(waiting))+plural(len(waiting), " is deleting its", " are deleting their")+" dependents, and this item has dependents of its own")

	default:
		// No owner left: collect it, honouring the policy its own finalizers ask for.
		policy := metav1.DeletePropagationBackground
		switch {
		case slices.Contains(latest.Finalizers, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case slices.Contains(latest.Finalizers, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		why := "all owners are gone: " + describeRefs(dangling)
		if len(waiting) > 0 {
			why = "its owners are being deleted in the foreground: " + describeRefs(append(dangling, waiting...))
		}
		return gc.deleteObject(ctx, AttemptToDelete, item.identity, latest, policy, why)
	}
}

// processDeletingDependentsItem finishes a foreground deletion once no blocking dependent
// remains, and otherwise makes sure the blockers are being worked on.
func (gc *GarbageCollector) processDeletingDependentsItem(ctx context.Context, item *node, v itemView) error {
	if len(v.blockers) == 0 {
		err := gc.removeFinalizer(ctx, AttemptToDelete, item.identity, metav1.FinalizerDeleteDependents,
			"no blocking dependents remain: the foreground deletion can finish")
		if err == nil && gc.opts.Mode == ModeActive {
			gc.finishedForeground.Add(item.identity.UID)
		}
		return err
	}
	gc.keep(item, "waiting for "+counted(len(v.blockers), "blocking dependent"))
	for _, dep := range v.idleBlockers {
		gc.attemptToDelete.Add(dep)
	}
	return nil
}

// classifyReferences sorts an item's live ownerReferences: solid (the owner exists and is
// not waiting for its dependents), dangling (absent: not found, another uid, or in
// another namespace) and waiting for dependents' deletion (foreground in progress).
//
// fromGraph: an owner the graph observed is taken as the graph last saw it, without asking
// the apiserver.
func (gc *GarbageCollector) classifyReferences(ctx context.Context, item *node, refs []metav1.OwnerReference, fromGraph bool) (solid, dangling, waiting []metav1.OwnerReference, err error) {
	for _, ref := range refs {
		isDangling, owner, err := gc.isDangling(ctx, ref, item, fromGraph)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case isDangling:
			dangling = append(dangling, ref)
		case owner.DeletionTimestamp != nil && slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents) &&
			!gc.finishedForeground.Has(owner.UID):
			waiting = append(waiting, ref)
		default:
			solid = append(solid, ref)
		}
	}
	return solid, dangling, waiting, nil
}

// isDangling looks ref's owner up (in the absent-owner cache first) and reports whether
// it is absent. The owner is looked for in the dependent's namespace: a reference to an
// object of another namespace is dangling.
func (gc *GarbageCollector) isDangling(ctx context.Context, ref metav1.OwnerReference, item *node, fromGraph bool) (bool, *metav1.PartialObjectMetadata, error) {
	key := objectReference{OwnerReference: ownerCoordinates(ref)}
	if gc.absentOwners.Has(key) {
		return true, nil, nil // a cluster-scoped owner known absent
	}
	key.Namespace = item.identity.Namespace
	if gc.absentOwners.Has(key) {
		return true, nil, nil
	}
	gvr, namespaced, err := gc.apiResource(ref.APIVersion, ref.Kind)
	if err != nil {
		return false, nil, err
	}
	if !namespaced {
		key.Namespace = ""
	}
	if item.identity.Namespace == "" && namespaced {
		// Upstream records no event here (it logs); the reason goes on the feed only.
		gc.keep(item, fmt.Sprintf("ownerRef [%s/%s, name: %s, uid: %s] is namespaced, but %s %s is cluster-scoped: the reference is invalid and the object is never collected for it",
			ref.APIVersion, ref.Kind, ref.Name, ref.UID, item.identity.Kind, item.identity.Name))
		return false, nil, errNamespacedOwnerOfClusterScopedObject
	}
	if gc.builder.deletedUIDs.Has(ref.UID) {
		gc.absentOwners.Add(key)
		return true, nil, nil // seen deleted: uids never come back
	}
	if fromGraph {
		if owner, ok := gc.observedOwner(ref, key.Namespace); ok {
			return false, owner, nil
		}
	}
	owner, err := gc.getObject(ctx, AttemptToDelete, key, lookUpOwnerOf+item.identity.Kind+" "+item.identity.Name, ptr.To(refOf(item.identity)))
	switch {
	case apierrors.IsNotFound(err):
		// The mapper may be stale: a version the apiserver stopped serving answers 404 as
		// well. Only a 404 from a version served right now proves the owner absent.
		served, derr := gc.servedNow(gvr)
		if derr != nil {
			return false, nil, derr
		}
		if !served {
			gc.mapper.Reset()
			return false, nil, &restMappingError{kind: ref.Kind, version: ref.APIVersion}
		}
		gc.absentOwners.Add(key)
		return true, nil, nil
	case err != nil:
		return false, nil, err
	case owner.UID != ref.UID:
		gc.absentOwners.Add(key)
		return true, nil, nil
	}
	return false, owner, nil
}

func blockingRefs(refs []metav1.OwnerReference) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, r := range refs {
		if isBlocking(r) {
			out = append(out, r)
		}
	}
	return out
}

func refUIDs(refs []metav1.OwnerReference) []types.UID {
	out := make([]types.UID, len(refs))
	for i, r := range refs {
		out[i] = r.UID
	}
	return out
}

// removeRefsReason says why references are removed, and which: the patch removes by uid
// (as upstream's does), so a solid reference that shares its uid with a removed one goes
// too, and the reason says so rather than claim it stays.
func removeRefsReason(solid, removed []metav1.OwnerReference) string {
	gone := map[types.UID]bool{}
	for _, r := range removed {
		gone[r.UID] = true
	}
	var kept, collateral []metav1.OwnerReference
	for _, r := range solid {
		if gone[r.UID] {
			collateral = append(collateral, r)
		} else {
			kept = append(kept, r)
		}
	}
	why := "removing references to " + describeRefs(removed)
	if len(kept) > 0 {
		why = ownersExist(refNames(kept)) + "; " + why
	}
	if len(collateral) > 0 {
		why += fmt.Sprintf("; the reference to %s goes too: it has the same uid %s, and references are removed by uid, so both references with that uid go",
			describeRefs(collateral), collateral[0].UID)
	}
	return why
}

// refNames are "Kind name" of each reference.
func refNames(refs []metav1.OwnerReference) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Kind + " " + r.Name
	}
	return out
}

func describeRefs(refs []metav1.OwnerReference) string {
	return strings.Join(refNames(refs), ", ")
}

// removedCause says why a reference patchRemoveRefs removed went: its owner was absent
// (one of dangling) or waited for its dependents.
func removedCause(dangling []metav1.OwnerReference) func(metav1.OwnerReference) OrphanCause {
	return func(ref metav1.OwnerReference) OrphanCause {
		if slices.ContainsFunc(dangling, func(d metav1.OwnerReference) bool { return d.UID == ref.UID }) {
			return OwnerAbsent
		}
		return OwnerDeletingDependents
	}
}
