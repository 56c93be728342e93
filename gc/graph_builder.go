package gc

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

type eventType int

const (
	addEvent eventType = iota
	updateEvent
	deleteEvent
)

func (t eventType) String() string {
	switch t {
	case addEvent:
		return "add"
	case updateEvent:
		return "update"
	default:
		return "delete"
	}
}

// event is one item of the graphChanges queue: an informer observation, or a virtual
// delete from a worker that found an object absent.
type event struct {
	// virtual: produced by a worker (the apiserver said 404 or another uid), not observed.
	virtual   bool
	eventType eventType
	obj       *metav1.PartialObjectMetadata
	// oldObj is the previous state on updates.
	oldObj *metav1.PartialObjectMetadata
	gvk    schema.GroupVersionKind
}

func (e *event) identity() objectReference {
	return objectReference{
		OwnerReference: metav1.OwnerReference{
			APIVersion: e.gvk.GroupVersion().String(), Kind: e.gvk.Kind, Name: e.obj.Name, UID: e.obj.UID,
		},
		Namespace: e.obj.Namespace,
	}
}

func (e *event) describe() (ObjectRef, string) {
	change := e.eventType.String()
	if e.virtual {
		change = "virtualDelete"
	}
	return refOf(e.identity()), change
}

// GraphBuilder turns informer events into the dependency graph. Its processGraphChanges
// goroutine is the graph's only writer; on the way it queues, as upstream does:
//   - virtual owners, to attemptToDelete, so a worker verifies they exist;
//   - objects starting to be deleted with the orphan finalizer, to attemptToOrphan;
//   - objects starting a foreground deletion, and their dependents, to attemptToDelete;
//   - owners a dependent stopped blocking (reference dropped, unblocked or dependent gone),
//     and dependents of removed or mismatched owners, to attemptToDelete.
//
// Every mutation is published to the feed while the graph lock is held, so that a
// Snapshot taken under that lock is exactly the state at its sequence number.
type GraphBuilder struct {
	graph            *graph
	feed             *Feed
	graphChanges     *workQueue[*event]
	attemptToDelete  *workQueue[*node]
	attemptToOrphan  *workQueue[*node]
	absentOwnerCache *ReferenceCache
	// deletedUIDs: objects the informers saw deleted (not virtual deletes). An owner among
	// them is absent for good, even once its kind is no longer served (its CRD went with it).
	deletedUIDs *uidSet
	warn        func(obj objectReference, reason, message string)
	processed   func()
	// shadow judges shadow decisions by what the informers observe (nil in active mode).
	shadow *shadowTracker
	// formerOwner names the owner of a removed reference, and now is the engine's clock:
	// for the orphan marks of shadow mode (orphan_marks.go).
	formerOwner func(ref metav1.OwnerReference, ns string) ObjectRef
	now         func() time.Time

	monitors *monitors
}

// enqueueVirtualDeleteEvent tells the graph builder that the object of this identity does
// not exist (a worker's GET said 404, or found another uid).
func (gb *GraphBuilder) enqueueVirtualDeleteEvent(ref objectReference) {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	gb.graphChanges.Add(&event{
		virtual:   true,
		eventType: deleteEvent,
		gvk:       gv.WithKind(ref.Kind),
		obj: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID,
		}},
	})
}

// runProcessGraphChanges processes graph changes until the queue shuts down.
func (gb *GraphBuilder) runProcessGraphChanges() {
	for gb.processGraphChangesItem() {
	}
}

func (gb *GraphBuilder) processGraphChangesItem() bool {
	item, quit := gb.graphChanges.Get()
	if quit {
		return false
	}
	defer gb.graphChanges.Done(item)
	gb.graph.mu.Lock()
	gb.processGraphChanges(item)
	gb.graph.mu.Unlock()
	gb.graphChanges.Forget(item)
	if gb.processed != nil {
		gb.processed()
	}
	return true
}

// processGraphChanges applies one event to the graph. Requires graph.mu held for writing.
func (gb *GraphBuilder) processGraphChanges(ev *event) {
	obj := ev.obj
	existing, found := gb.graph.read(obj.UID)
	if gb.shadow != nil && !ev.virtual {
		var before []metav1.OwnerReference
		if found {
			before = existing.owners
		}
		defer func() {
			if removed := gb.shadow.observed(obj, ev.eventType == deleteEvent); len(removed) > 0 && ev.eventType != deleteEvent {
				gb.markSeenRemoved(obj.UID, before, removed)
			}
		}()
	}
	if found && !ev.virtual && existing.virtual {
		// The real object of a virtual node is observed. The identity dependents gave it
		// may be wrong: dependents that disagree are checked again.
		observed := ev.identity()
		if observed != existing.identity {
			_, mismatched := partitionDependents(existing.dependentList(), observed)
			for _, dep := range mismatched {
				if observed.Namespace != "" && dep.identity.Namespace != observed.Namespace {
					gb.reportInvalidNamespaceOwnerRef(dep, observed.UID)
				}
				gb.attemptToDelete.Add(dep)
			}
			replacement := existing.clone()
			replacement.identity = observed
			gb.graph.write(replacement)
			existing = replacement
		}
		gb.graph.markObserved(existing)
		gb.publishNode(NodeUpdated, existing)
	}

	switch {
	case (ev.eventType == addEvent || ev.eventType == updateEvent) && !found:
		n := &node{identity: ev.identity(), owners: obj.OwnerReferences} // dependents: made on the first
		observe(n, obj)
		gb.insertNode(n)
		gb.processTransitions(ev.oldObj, obj, n)

	case ev.eventType == addEvent || ev.eventType == updateEvent:
		added, removed, changed := referencesDiffs(existing.owners, obj.OwnerReferences)
		if len(added) > 0 || len(removed) > 0 || len(changed) > 0 {
			// Owners this object stopped blocking may now finish a foreground deletion.
			gb.addUnblockedOwnersToDeleteQueue(removed, changed)
			existing.owners = obj.OwnerReferences
			for _, ref := range removed {
				gb.feed.publish(Event{Type: EdgeRemoved, Edge: edgeOf(existing.identity.UID, ref)})
			}
			for _, c := range changed {
				gb.feed.publish(Event{Type: EdgeAdded, Edge: edgeOf(existing.identity.UID, c.newRef)})
			}
			gb.addDependentToOwners(existing, added)
			gb.removeDependentFromOwners(existing, removed)
		}
		observe(existing, obj)
		gb.publishNode(NodeUpdated, existing)
		gb.processTransitions(ev.oldObj, obj, existing)

	case ev.eventType == deleteEvent:
		if !found {
			return
		}
		gb.processDelete(ev, existing)
	}
}

// processDelete handles observed and virtual deletes. A virtual delete only proves that
// one identity is absent: a node that dependents know by other identities stays, and the
// next identity is tried.
func (gb *GraphBuilder) processDelete(ev *event, existing *node) {
	removeExisting := true
	if ev.virtual {
		deleted := ev.identity()
		switch {
		case existing.virtual:
			matching, mismatched := partitionDependents(existing.dependentList(), deleted)
			if len(mismatched) > 0 {
				// Some dependents name this owner by other coordinates: keep the node.
				removeExisting = false
				if len(matching) > 0 {
					gb.absentOwnerCache.Add(deleted)
					for _, dep := range matching {
						gb.attemptToDelete.Add(dep)
					}
				}
				if existing.identity == deleted {
					// The identity the node had is absent: try another one.
					if alt := alternateOwnerIdentity(mismatched, deleted); alt != nil {
						replacement := existing.clone()
						replacement.identity = *alt
						gb.graph.write(replacement)
						gb.publishNode(NodeUpdated, replacement)
						gb.attemptToDelete.AddRateLimited(replacement)
					}
				}
			}
		case existing.identity != deleted:
			// The node was observed, under other coordinates: the real object stays, and
			// the dependents that used the absent coordinates are checked.
			removeExisting = false
			matching, _ := partitionDependents(existing.dependentList(), deleted)
			if len(matching) > 0 {
				gb.absentOwnerCache.Add(deleted)
				for _, dep := range matching {
					gb.attemptToDelete.Add(dep)
				}
			}
		}
	}
	if !removeExisting {
		return
	}

	gb.removeNode(existing)
	if !ev.virtual {
		gb.deletedUIDs.Add(ev.identity().UID)
	}
	if len(existing.dependents) > 0 {
		// Remember the owner is gone, so its dependents need not ask the apiserver.
		gb.absentOwnerCache.Add(ev.identity())
	}
	for _, dep := range existing.dependentList() {
		gb.attemptToDelete.Add(dep)
	}
	for _, ref := range existing.owners {
		owner, ok := gb.graph.read(ref.UID)
		if ok && owner.deletingDependents {
			// One blocking dependent fewer: the owner may finish its foreground deletion.
			gb.attemptToDelete.Add(owner)
		}
	}
}

// observe copies the deletion state of the latest observation onto n. Both marks are
// one-way, as upstream's markBeingDeleted and markDeletingDependents: an object being
// deleted is never undeleted, and one seen deleting its dependents stays marked even when
// a second delete swaps foregroundDeletion for orphan (upstream's cycle-breaking and
// blocker handling read the mark, so clearing it would decide differently).
func observe(n *node, obj *metav1.PartialObjectMetadata) {
	n.finalizers = obj.Finalizers
	n.resourceVersion = obj.ResourceVersion
	n.deletionTimestamp = nil
	if obj.DeletionTimestamp != nil {
		t := obj.DeletionTimestamp.Time
		n.deletionTimestamp = &t
		n.beingDeleted = true
	}
	if n.beingDeleted && slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents) {
		n.deletingDependents = true
	}
}

// processTransitions queues what a deletion with the orphan or foregroundDeletion
// finalizer asks for, the moment it starts.
func (gb *GraphBuilder) processTransitions(oldObj, newObj *metav1.PartialObjectMetadata, n *node) {
	if deletionStartsWithFinalizer(oldObj, newObj, metav1.FinalizerOrphanDependents) {
		gb.attemptToOrphan.Add(n)
		return
	}
	if deletionStartsWithFinalizer(oldObj, newObj, metav1.FinalizerDeleteDependents) {
		// observe has marked n deletingDependents: its dependents must go first.
		for _, dep := range n.dependentList() {
			gb.attemptToDelete.Add(dep)
		}
		gb.attemptToDelete.Add(n)
	}
}

// deletionStartsWithFinalizer: newObj is being deleted with finalizer, and oldObj (if
// any) was not.
func deletionStartsWithFinalizer(oldObj, newObj *metav1.PartialObjectMetadata, finalizer string) bool {
	if newObj.DeletionTimestamp == nil || !slices.Contains(newObj.Finalizers, finalizer) {
		return false
	}
	if oldObj == nil {
		return true
	}
	return oldObj.DeletionTimestamp == nil || !slices.Contains(oldObj.Finalizers, finalizer)
}

func (gb *GraphBuilder) insertNode(n *node) {
	gb.graph.write(n)
	gb.publishNode(NodeAdded, n)
	gb.addDependentToOwners(n, n.owners)
}

// addDependentToOwners links n to each owner, creating virtual nodes for owners not in
// the graph (queued for verification). n itself is queued when a reference may be
// invalid: a namespaced owner in another namespace, coordinates that differ from the
// owner node's, or a namespaced dependent of a cluster-scoped virtual owner (which may be
// a namespaced owner named by a cluster-scoped object).
func (gb *GraphBuilder) addDependentToOwners(n *node, owners []metav1.OwnerReference) {
	suspect := false
	for _, ref := range owners {
		gb.feed.publish(Event{Type: EdgeAdded, Edge: edgeOf(n.identity.UID, ref)})
		owner, ok := gb.graph.read(ref.UID)
		if !ok {
			owner = &node{
				identity:   objectReference{OwnerReference: ownerCoordinates(ref), Namespace: n.identity.Namespace},
				dependents: map[*node]struct{}{},
				virtual:    true,
			}
			gb.graph.write(owner)
			gb.publishNode(NodeAdded, owner)
		}
		if owner.dependents == nil {
			owner.dependents = map[*node]struct{}{} // most objects (Pods) never have one
		}
		owner.dependents[n] = struct{}{}
		switch {
		case !ok:
			gb.attemptToDelete.Add(owner)
		case suspect:
		case owner.identity.Namespace != "" && owner.identity.Namespace != n.identity.Namespace:
			// A namespaced owner can only own objects of its own namespace.
			if !owner.virtual {
				gb.reportInvalidNamespaceOwnerRef(n, ref.UID)
			}
			suspect = true
		case ownerCoordinates(ref) != owner.identity.OwnerReference:
			suspect = true
		case owner.identity.Namespace == "" && n.identity.Namespace != "" && owner.virtual:
			suspect = true
		}
	}
	if suspect {
		gb.attemptToDelete.Add(n)
	}
}

func (gb *GraphBuilder) removeNode(n *node) {
	gb.graph.delete(n.identity.UID)
	gb.publishNode(NodeRemoved, n)
	for _, ref := range n.owners {
		gb.feed.publish(Event{Type: EdgeRemoved, Edge: edgeOf(n.identity.UID, ref)})
	}
	gb.removeDependentFromOwners(n, n.owners)
}

func (gb *GraphBuilder) removeDependentFromOwners(n *node, owners []metav1.OwnerReference) {
	for _, ref := range owners {
		if owner, ok := gb.graph.read(ref.UID); ok {
			delete(owner.dependents, n)
		}
	}
}

// addUnblockedOwnersToDeleteQueue queues owners whose blocking reference was removed or
// changed to non-blocking.
func (gb *GraphBuilder) addUnblockedOwnersToDeleteQueue(removed []metav1.OwnerReference, changed []ownerRefPair) {
	for _, ref := range removed {
		if isBlocking(ref) {
			if owner, ok := gb.graph.read(ref.UID); ok {
				gb.attemptToDelete.Add(owner)
			}
		}
	}
	for _, c := range changed {
		if isBlocking(c.oldRef) && !isBlocking(c.newRef) {
			if owner, ok := gb.graph.read(c.newRef.UID); ok {
				gb.attemptToDelete.Add(owner)
			}
		}
	}
}

func isBlocking(ref metav1.OwnerReference) bool {
	return ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
}

// reportInvalidNamespaceOwnerRef records a Warning on a dependent whose namespaced owner
// is in another namespace.
func (gb *GraphBuilder) reportInvalidNamespaceOwnerRef(n *node, ownerUID types.UID) {
	var ref metav1.OwnerReference
	for _, o := range n.owners {
		if o.UID == ownerUID {
			ref = o
			break
		}
	}
	gb.warn(n.identity, "OwnerRefInvalidNamespace", fmt.Sprintf(
		"ownerRef [%s/%s, namespace: %s, name: %s, uid: %s] does not exist in namespace %q",
		ref.APIVersion, ref.Kind, n.identity.Namespace, ref.Name, ref.UID, n.identity.Namespace))
}

func (gb *GraphBuilder) publishNode(t EventType, n *node) {
	gb.graph.counts.track(t, n) // every change of a node is published: the counts follow them here
	gb.feed.publish(Event{Type: t, Node: stateOf(n)})
}

type ownerRefPair struct {
	oldRef, newRef metav1.OwnerReference
}

// referencesDiffs compares two ownerReference lists by owner uid.
func referencesDiffs(old, new []metav1.OwnerReference) (added, removed []metav1.OwnerReference, changed []ownerRefPair) {
	oldByUID := make(map[types.UID]metav1.OwnerReference, len(old))
	for _, r := range old {
		oldByUID[r.UID] = r
	}
	for _, r := range new {
		o, ok := oldByUID[r.UID]
		if !ok {
			added = append(added, r)
			continue
		}
		if !ownerRefEqual(o, r) {
			changed = append(changed, ownerRefPair{oldRef: o, newRef: r})
		}
		delete(oldByUID, r.UID)
	}
	for _, r := range old {
		if _, gone := oldByUID[r.UID]; gone {
			removed = append(removed, r)
		}
	}
	return added, removed, changed
}

func ownerRefEqual(a, b metav1.OwnerReference) bool {
	return ownerCoordinates(a) == ownerCoordinates(b) &&
		boolValue(a.Controller) == boolValue(b.Controller) && boolValue(a.BlockOwnerDeletion) == boolValue(b.BlockOwnerDeletion)
}

func boolValue(b *bool) bool { return b != nil && *b }

// partitionDependents splits dependents into those whose reference to owner.UID matches
// owner's coordinates and those whose does not. A dependent in another namespace than a
// namespaced owner matches nothing.
func partitionDependents(dependents []*node, owner objectReference) (matching, mismatched []*node) {
	for _, dep := range dependents {
		match, mismatch := false, false
		if owner.Namespace != "" && dep.identity.Namespace != owner.Namespace {
			mismatch = true
		} else {
			for _, ref := range dep.owners {
				if ref.UID != owner.UID {
					continue
				}
				if ownerCoordinates(ref) == owner.OwnerReference {
					match = true
				} else {
					mismatch = true
				}
			}
		}
		if match {
			matching = append(matching, dep)
		}
		if mismatch {
			mismatched = append(mismatched, dep)
		}
	}
	return matching, mismatched
}

// alternateOwnerIdentity picks the next identity to verify for a virtual owner once
// absent has been proven absent: among the other coordinates dependents use for the same
// uid, the lowest that sorts after absent, else the lowest. Cycling in this fixed order
// gives every identity its turn.
func alternateOwnerIdentity(dependents []*node, absent objectReference) *objectReference {
	clusterScoped := absent.Namespace == ""
	seen := map[objectReference]bool{absent: true}
	var first, firstAfter *objectReference
	for _, dep := range dependents {
		for _, ref := range dep.owners {
			if ref.UID != absent.UID {
				continue
			}
			alt := objectReference{OwnerReference: ownerCoordinates(ref), Namespace: dep.identity.Namespace}
			if clusterScoped && alt.APIVersion == absent.APIVersion && alt.Kind == absent.Kind {
				// This kind is known absent cluster-wide; the namespace makes no difference.
				alt.Namespace = ""
			}
			if seen[alt] {
				continue
			}
			seen[alt] = true
			a := alt
			if first == nil || referenceLess(a, *first) {
				first = &a
			}
			if referenceLess(absent, a) && (firstAfter == nil || referenceLess(a, *firstAfter)) {
				firstAfter = &a
			}
		}
	}
	if firstAfter != nil {
		return firstAfter
	}
	return first
}

func referenceLess(a, b objectReference) bool {
	for _, c := range [][2]string{{a.APIVersion, b.APIVersion}, {a.Kind, b.Kind}, {a.Name, b.Name}, {string(a.UID), string(b.UID)}, {a.Namespace, b.Namespace}} {
		if c[0] != c[1] {
			return c[0] < c[1]
		}
	}
	return false
}
