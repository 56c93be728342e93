package gc

// The collector's rules, each as a short list of steps (steps_test.go): informer events,
// worker runs and the apiserver's answers, with the graph, the queues and the requests
// expected after them. Each scenario names the upstream v1.37.1 code
// (k8s.io/kubernetes/pkg/controller/garbagecollector) that decides the same way. Where
// gcscope reads less (it decides from the graph what upstream GETs: docs/fidelity.md),
// the reads differ and the writes, graph and queues do not.

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
)

const heldBy = "example.com/hold"

func TestCollectorRules(t *testing.T) {
	for _, sc := range []struct {
		name  string
		steps func() []step
	}{
		{"background: an owner's delete collects its dependents, a second solid owner keeps one", backgroundCascade},
		{"virtual owner verified absent: its dependent is collected", virtualOwnerAbsent},
		{"virtual owner that exists unobserved: verified again until observed", virtualOwnerNotObservedYet},
		{"owner that came back with a new uid: absent for its old dependents", ownerRecreatedWithNewUID},
		{"dangling reference removed while another owner is solid", danglingReferenceBesideSolidOwner},
		{"owner named by the wrong kind: dangling, the owner stays", ownerNamedByWrongKind},
		{"namespaced owner in another namespace: dangling, with a Warning", ownerInAnotherNamespace},
		{"cluster-scoped dependent of a namespaced owner: never collected, with a Warning", clusterScopedDependentOfNamespacedOwner},
		{"dependent being deleted keeps its references", dependentBeingDeletedKeepsReferences},
		{"foreground waits for blocking dependents only", foregroundWaitsForBlockingDependents},
		{"foreground cascades down a chain", foregroundCascadesDownAChain},
		{"cycle of blocking owners: unblock, then delete", cycleOfBlockingOwners},
		{"orphan: references first, then the finalizer", orphanReferencesThenFinalizer},
	} {
		t.Run(sc.name, func(t *testing.T) { runSteps(t, sc.steps()) })
	}
}

// upstream: processGraphChanges (an observed delete caches the owner's absence and queues
// its dependents), attemptToDeleteItem (no owner left → delete with Background; a solid
// owner left → patch away the dangling reference).
func backgroundCascade() []step {
	owner := configMap("a", "owner", "uid-owner")
	other := configMap("a", "other", "uid-other")
	only := configMap("a", "only", "uid-1-only", owned(ownerRefTo(owner, blocking, controls)))
	shared := configMap("a", "shared", "uid-2-shared", owned(ownerRefTo(owner), ownerRefTo(other)))
	kept := changed(shared, owned(ownerRefTo(other)))
	return []step{
		store(owner, other, only, shared),
		informerSees(evAdd(owner), evAdd(other), evAdd(only), evAdd(shared)),
		expect(state{graph: []*node{observedNode(owner), observedNode(other), observedNode(only), observedNode(shared)}}),
		apiserverRemoves(owner), // deleted with propagationPolicy=Background
		informerSees(evDelete(owner)),
		expect(state{
			graph:           []*node{observedNode(other), observedNode(only), observedNode(shared)},
			attemptToDelete: []*node{observedNode(only), observedNode(shared)},
			absent:          []objectReference{identityOf(owner)},
		}),
		processAttemptToDelete(2), // the absent owner is not looked up; the solid one is
		expect(state{
			graph:  []*node{observedNode(other), observedNode(only), observedNode(shared)},
			writes: []string{"delete configmaps a/only Background", "patch configmaps a/shared remove owner uid-owner"},
			reads:  []string{"get configmaps a/other"},
			absent: []objectReference{identityOf(owner)},
		}),
		informerSees(evDelete(only), evUpdate(shared, kept)),
		expect(state{graph: []*node{observedNode(other), observedNode(kept)}, absent: []objectReference{identityOf(owner)}}),
	}
}

// upstream: attemptToDeleteItem (GET 404 → enqueueVirtualDeleteEvent), processGraphChanges
// (a virtual delete removes the node, caches the absence, queues the dependents).
func virtualOwnerAbsent() []step {
	ghost := configMap("a", "ghost", "uid-ghost")
	dep := configMap("a", "dep", "uid-dep", owned(ownerRefTo(ghost, blocking)))
	return []step{
		store(dep),
		informerSees(evAdd(dep)),
		expect(state{
			graph:           []*node{observedNode(dep), virtualNode(identityOf(ghost))},
			attemptToDelete: []*node{virtualNode(identityOf(ghost))},
		}),
		processAttemptToDelete(1), // the virtual owner is looked up: 404
		expect(state{
			graph:        []*node{observedNode(dep), virtualNode(identityOf(ghost))},
			graphChanges: []string{"virtualDelete v1/ConfigMap a/ghost"},
			reads:        []string{"get configmaps a/ghost"},
		}),
		processGraphChanges(1),
		expect(state{
			graph:           []*node{observedNode(dep)},
			attemptToDelete: []*node{observedNode(dep)},
			absent:          []objectReference{identityOf(ghost)},
		}),
		processAttemptToDelete(1),
		expect(state{
			graph:  []*node{observedNode(dep)},
			writes: []string{"delete configmaps a/dep Background"},
			absent: []objectReference{identityOf(ghost)},
		}),
		informerSees(evDelete(dep)),
		expect(state{absent: []objectReference{identityOf(ghost)}}),
	}
}

// upstream: attemptToDeleteWorker ("item hasn't been observed via informer yet" →
// requeueItem), processGraphChanges (markObserved on the node already queued); the first
// scenario of TestConflictingData.
func virtualOwnerNotObservedYet() []step {
	owner := configMap("a", "owner", "uid-owner")
	dep := configMap("a", "dep", "uid-dep", owned(ownerRefTo(owner)))
	return []step{
		store(owner, dep),
		informerSees(evAdd(dep)),
		expect(state{
			graph:           []*node{observedNode(dep), virtualNode(identityOf(owner))},
			attemptToDelete: []*node{virtualNode(identityOf(owner))},
		}),
		processAttemptToDelete(1), // it exists, but no informer has seen it: retried
		expect(state{
			graph:   []*node{observedNode(dep), virtualNode(identityOf(owner))},
			backoff: []*node{virtualNode(identityOf(owner))},
			reads:   []string{"get configmaps a/owner"},
		}),
		backoffElapses(),
		processAttemptToDelete(1), // still not seen: retried again
		expect(state{
			graph:   []*node{observedNode(dep), virtualNode(identityOf(owner))},
			backoff: []*node{virtualNode(identityOf(owner))},
			reads:   []string{"get configmaps a/owner"},
		}),
		informerSees(evAdd(owner)), // the queued node itself becomes observed
		backoffElapses(),
		expect(state{
			graph:           []*node{observedNode(dep), observedNode(owner)},
			attemptToDelete: []*node{observedNode(owner)},
		}),
		processAttemptToDelete(1), // an observed object without owners: nothing to do
		expect(state{graph: []*node{observedNode(dep), observedNode(owner)}}),
	}
}

// upstream: attemptToDeleteItem (latest.GetUID() != item.identity.UID →
// enqueueVirtualDeleteEvent): a name that holds another uid is no owner.
func ownerRecreatedWithNewUID() []step {
	before := configMap("a", "owner", "uid-owner-1")
	after := configMap("a", "owner", "uid-owner-2")
	dep := configMap("a", "dep", "uid-dep", owned(ownerRefTo(before, blocking, controls)))
	return []step{
		store(after, dep),
		informerSees(evAdd(after), evAdd(dep)),
		expect(state{
			graph:           []*node{observedNode(after), observedNode(dep), virtualNode(identityOf(before))},
			attemptToDelete: []*node{virtualNode(identityOf(before))},
		}),
		processAttemptToDelete(1), // the name holds uid-owner-2
		expect(state{
			graph:        []*node{observedNode(after), observedNode(dep), virtualNode(identityOf(before))},
			graphChanges: []string{"virtualDelete v1/ConfigMap a/owner"},
			reads:        []string{"get configmaps a/owner"},
		}),
		processGraphChanges(1),
		expect(state{
			graph:           []*node{observedNode(after), observedNode(dep)},
			attemptToDelete: []*node{observedNode(dep)},
			absent:          []objectReference{identityOf(before)},
		}),
		processAttemptToDelete(1),
		expect(state{
			graph:  []*node{observedNode(after), observedNode(dep)},
			writes: []string{"delete configmaps a/dep Background"},
			absent: []objectReference{identityOf(before)},
		}),
		informerSees(evDelete(dep)),
		expect(state{graph: []*node{observedNode(after)}, absent: []objectReference{identityOf(before)}}),
	}
}

// upstream: attemptToDeleteItem (solid owners and dangling ones → patch
// deleteOwnerRefStrategicMergePatch of the dangling uids; no delete).
func danglingReferenceBesideSolidOwner() []step {
	solid := configMap("a", "solid", "uid-solid")
	gone := configMap("a", "gone", "uid-gone")
	dep := configMap("a", "dep", "uid-dep", owned(ownerRefTo(solid), ownerRefTo(gone)))
	kept := changed(dep, owned(ownerRefTo(solid)))
	return []step{
		store(solid, dep),
		informerSees(evAdd(solid), evAdd(dep)),
		expect(state{
			graph:           []*node{observedNode(solid), observedNode(dep), virtualNode(identityOf(gone))},
			attemptToDelete: []*node{virtualNode(identityOf(gone))},
		}),
		processAttemptToDelete(1),
		processGraphChanges(1),
		expect(state{
			graph:           []*node{observedNode(solid), observedNode(dep)},
			attemptToDelete: []*node{observedNode(dep)},
			absent:          []objectReference{identityOf(gone)},
			reads:           []string{"get configmaps a/gone"},
		}),
		processAttemptToDelete(1), // the solid owner is read live before the patch, as upstream reads it
		expect(state{
			graph:  []*node{observedNode(solid), observedNode(dep)},
			writes: []string{"patch configmaps a/dep remove owner uid-gone"},
			reads:  []string{"get configmaps a/solid"},
			absent: []objectReference{identityOf(gone)},
		}),
		informerSees(evUpdate(dep, kept)),
		expect(state{
			graph:  []*node{observedNode(solid), observedNode(kept)},
			absent: []objectReference{identityOf(gone)},
		}),
	}
}

// upstream: addDependentToOwners (!ownerReferenceMatchesCoordinates → the dependent is
// queued), attemptToDeleteItem/isDangling (the reference's kind is looked up: 404).
func ownerNamedByWrongKind() []step {
	rs := replicaSet("a", "web", "uid-web")
	good := pod("a", "good", "uid-good", owned(ownerRefTo(rs, controls)))
	wrongKind := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "web", UID: "uid-web"}
	bad := pod("a", "bad", "uid-bad", owned(wrongKind))
	return []step{
		store(rs, good, bad),
		informerSees(evAdd(rs), evAdd(good)),
		expect(state{graph: []*node{observedNode(rs), observedNode(good)}}),
		informerSees(evAdd(bad)), // its reference disagrees with the observed owner: checked
		expect(state{
			graph:           []*node{observedNode(rs), observedNode(good), observedNode(bad)},
			attemptToDelete: []*node{observedNode(bad)},
		}),
		processAttemptToDelete(1),
		expect(state{
			graph:  []*node{observedNode(rs), observedNode(good), observedNode(bad)},
			reads:  []string{"get configmaps a/web"},
			writes: []string{"delete pods a/bad Background"},
			absent: []objectReference{refIdentity("v1", "ConfigMap", "a", "web", "uid-web")},
		}),
		informerSees(evDelete(bad)),
		expect(state{
			graph:  []*node{observedNode(rs), observedNode(good)},
			absent: []objectReference{refIdentity("v1", "ConfigMap", "a", "web", "uid-web")},
		}),
	}
}

// upstream: addDependentToOwners (an observed owner in another namespace →
// reportInvalidNamespaceOwnerRef, the dependent queued), isDangling (the owner is looked
// for in the dependent's namespace); TestConflictingData's "bad child in ns1 -> owner in
// ns2 (owner first)".
func ownerInAnotherNamespace() []step {
	owner := configMap("b", "owner", "uid-owner")
	stray := configMap("a", "stray", "uid-stray", owned(ownerRefTo(owner)))
	ownerInA := refIdentity("v1", "ConfigMap", "a", "owner", "uid-owner")
	return []step{
		store(owner, stray),
		informerSees(evAdd(owner), evAdd(stray)),
		expect(state{
			graph:           []*node{observedNode(owner), observedNode(stray)},
			attemptToDelete: []*node{observedNode(stray)},
			warnings:        []string{`ConfigMap a/stray: OwnerRefInvalidNamespace: ownerRef [v1/ConfigMap, namespace: a, name: owner, uid: uid-owner] does not exist in namespace "a"`},
		}),
		processAttemptToDelete(1),
		expect(state{
			graph:  []*node{observedNode(owner), observedNode(stray)},
			reads:  []string{"get configmaps a/owner"},
			writes: []string{"delete configmaps a/stray Background"},
			absent: []objectReference{ownerInA},
		}),
		informerSees(evDelete(stray)),
		expect(state{graph: []*node{observedNode(owner)}, absent: []objectReference{ownerInA}}),
	}
}

// upstream: attemptToDeleteWorker (namespacedOwnerOfClusterScopedObjectErr → forgetItem,
// never requeued), processGraphChanges (the observed owner's other-namespace dependents
// → reportInvalidNamespaceOwnerRef); TestConflictingData's "bad cluster-scoped child ->
// owner in ns1 (child first)", then the owner's delete, which collects nothing.
func clusterScopedDependentOfNamespacedOwner() []step {
	owner := configMap("a", "owner", "uid-owner")
	pv := testObject("v1", "PersistentVolume", "", "pv", "uid-pv", owned(ownerRefTo(owner)))
	ownerWithoutNamespace := refIdentity("v1", "ConfigMap", "", "owner", "uid-owner")
	return []step{
		store(owner, pv),
		informerSees(evAdd(pv)),
		expect(state{
			graph:           []*node{observedNode(pv), virtualNode(ownerWithoutNamespace)},
			attemptToDelete: []*node{virtualNode(ownerWithoutNamespace)},
		}),
		// A namespaced kind without a namespace: not looked up, not retried, and nothing
		// else queued (upstream's worker only forgets the item).
		processAttemptToDelete(1),
		expect(state{
			graph: []*node{observedNode(pv), virtualNode(ownerWithoutNamespace)},
			reads: []string{},
		}),
		informerSees(evAdd(owner)),
		expect(state{
			graph:           []*node{observedNode(pv), observedNode(owner)},
			attemptToDelete: []*node{observedNode(pv)},
			warnings:        []string{`PersistentVolume /pv: OwnerRefInvalidNamespace: ownerRef [v1/ConfigMap, namespace: , name: owner, uid: uid-owner] does not exist in namespace ""`},
		}),
		processAttemptToDelete(1),
		expect(state{graph: []*node{observedNode(pv), observedNode(owner)}}),
		informerSees(evDelete(owner)), // the owner goes: its dependent is checked again
		expect(state{
			graph:           []*node{observedNode(pv)},
			attemptToDelete: []*node{observedNode(pv)},
			absent:          []objectReference{identityOf(owner)},
		}),
		processAttemptToDelete(1), // and still never collected for it
		expect(state{graph: []*node{observedNode(pv)}, absent: []objectReference{identityOf(owner)}}),
	}
}

// upstream: attemptToDeleteItem ("being deleted" is a one-way trip: isBeingDeleted &&
// !isDeletingDependents → return nil, before any request).
func dependentBeingDeletedKeepsReferences() []step {
	solid := configMap("a", "solid", "uid-solid")
	gone := configMap("a", "gone", "uid-gone")
	dep := configMap("a", "dep", "uid-dep", owned(ownerRefTo(solid), ownerRefTo(gone)), deleting(), finalized(heldBy))
	return []step{
		store(solid, dep),
		informerSees(evAdd(solid), evAdd(dep)),
		processAttemptToDelete(1),
		processGraphChanges(1),
		expect(state{
			graph:           []*node{observedNode(solid), observedNode(dep)},
			attemptToDelete: []*node{observedNode(dep)},
			absent:          []objectReference{identityOf(gone)},
		}),
		processAttemptToDelete(1), // no patch: the dangling reference stays until the object goes
		expect(state{
			graph:  []*node{observedNode(solid), observedNode(dep)},
			absent: []objectReference{identityOf(gone)},
			reads:  []string{},
		}),
		informerSees(evDelete(dep)), // its finalizer was released
		expect(state{graph: []*node{observedNode(solid)}, absent: []objectReference{identityOf(gone)}}),
	}
}

// upstream: processTransitions (startsWaitingForDependentsDeleted → the dependents, then
// the owner, queued), attemptToDeleteItem (an owner waiting for its dependents and no
// dependents of its own → the policy of the item's finalizers), processDeletingDependentsItem
// (blockingDependents: only blockOwnerDeletion references hold; idle blockers queued again;
// removeFinalizer once none is left), processGraphChanges (a deleted dependent queues its
// owner that is deleting dependents).
func foregroundWaitsForBlockingDependents() []step {
	owner := configMap("a", "owner", "uid-owner")
	blocker := configMap("a", "blocker", "uid-1-blocker", owned(ownerRefTo(owner, blocking)))
	loose := configMap("a", "loose", "uid-2-loose", owned(ownerRefTo(owner, notBlocking)))
	waiting := changed(owner, deleting(), finalized(metav1.FinalizerDeleteDependents))
	return []step{
		store(owner, blocker, loose),
		informerSees(evAdd(owner), evAdd(blocker), evAdd(loose)),
		expect(state{graph: []*node{observedNode(owner), observedNode(blocker), observedNode(loose)}}),
		store(waiting), // deleted with propagationPolicy=Foreground
		informerSees(evUpdate(owner, waiting)),
		expect(state{
			graph:           []*node{observedNode(waiting), observedNode(blocker), observedNode(loose)},
			attemptToDelete: []*node{observedNode(blocker), observedNode(loose), observedNode(waiting)},
		}),
		processAttemptToDelete(2), // both dependents: their only owner is being deleted
		expect(state{
			graph:           []*node{observedNode(waiting), observedNode(blocker), observedNode(loose)},
			attemptToDelete: []*node{observedNode(waiting)},
			writes:          []string{"delete configmaps a/blocker Background", "delete configmaps a/loose Background"},
		}),
		processAttemptToDelete(1), // the owner waits for blocker (not seen gone yet) and queues it again
		expect(state{
			graph:           []*node{observedNode(waiting), observedNode(blocker), observedNode(loose)},
			attemptToDelete: []*node{observedNode(blocker)},
		}),
		informerSees(evDelete(blocker)),
		expect(state{
			graph:           []*node{observedNode(waiting), observedNode(loose)},
			attemptToDelete: []*node{observedNode(blocker), observedNode(waiting)},
		}),
		// blocker left the graph: nothing to do (upstream GETs it, and its 404 queues a
		// virtual delete that finds no node)
		processAttemptToDelete(1),
		processAttemptToDelete(1), // loose is still there, but does not block
		expect(state{
			graph:  []*node{observedNode(waiting), observedNode(loose)},
			writes: []string{"patch configmaps a/owner finalizers []"},
		}),
		informerSees(evDelete(waiting), evDelete(loose)),
		expect(state{
			attemptToDelete: []*node{observedNode(loose)},
			absent:          []objectReference{identityOf(owner)},
		}),
	}
}

// upstream: attemptToDeleteItem (an owner waiting for its dependents and dependents of its
// own → delete with Foreground, so the wait extends down the chain),
// processDeletingDependentsItem at each level once its blockers are gone.
func foregroundCascadesDownAChain() []step {
	top := configMap("a", "top", "uid-top")
	mid := configMap("a", "mid", "uid-mid", owned(ownerRefTo(top, blocking)))
	leaf := configMap("a", "leaf", "uid-leaf", owned(ownerRefTo(mid, blocking)))
	topWaiting := changed(top, deleting(), finalized(metav1.FinalizerDeleteDependents))
	midWaiting := changed(mid, deleting(), finalized(metav1.FinalizerDeleteDependents))
	return []step{
		store(top, mid, leaf),
		apiserverDeletes("configmaps"),
		informerSees(evAdd(top), evAdd(mid), evAdd(leaf)),
		store(topWaiting),
		informerSees(evUpdate(top, topWaiting)),
		expect(state{
			graph:           []*node{observedNode(topWaiting), observedNode(mid), observedNode(leaf)},
			attemptToDelete: []*node{observedNode(mid), observedNode(topWaiting)},
		}),
		processAttemptToDelete(2), // mid has a dependent: Foreground; top waits for mid
		expect(state{
			graph:           []*node{observedNode(topWaiting), observedNode(mid), observedNode(leaf)},
			attemptToDelete: []*node{observedNode(mid)},
			writes:          []string{"delete configmaps a/mid Foreground"},
		}),
		informerSees(evUpdate(mid, midWaiting)),
		expect(state{
			graph:           []*node{observedNode(topWaiting), observedNode(midWaiting), observedNode(leaf)},
			attemptToDelete: []*node{observedNode(midWaiting), observedNode(leaf)},
		}),
		processAttemptToDelete(2), // mid waits for leaf (queued already); leaf's owner waits and it has no dependents
		expect(state{
			graph:  []*node{observedNode(topWaiting), observedNode(midWaiting), observedNode(leaf)},
			writes: []string{"delete configmaps a/leaf Background"},
		}),
		informerSees(evDelete(leaf)), // mid is queued: one blocking dependent fewer
		expect(state{
			graph:           []*node{observedNode(topWaiting), observedNode(midWaiting)},
			attemptToDelete: []*node{observedNode(midWaiting)},
		}),
		processAttemptToDelete(1), // no blocker left
		expect(state{
			graph:  []*node{observedNode(topWaiting), observedNode(midWaiting)},
			writes: []string{"patch configmaps a/mid finalizers []"},
		}),
		informerSees(evDelete(midWaiting)),
		expect(state{
			graph:           []*node{observedNode(topWaiting)},
			attemptToDelete: []*node{observedNode(topWaiting)},
		}),
		processAttemptToDelete(1),
		expect(state{
			graph:  []*node{observedNode(topWaiting)},
			writes: []string{"patch configmaps a/top finalizers []"},
		}),
		informerSees(evDelete(topWaiting)),
		expect(state{}),
	}
}

// upstream: attemptToDeleteItem (an owner waiting and a dependent deleting its dependents:
// unblockOwnerReferencesStrategicMergePatch, then deleteObject with the decision's
// resourceVersion, refused once the patch moved it), processGraphChanges
// (addUnblockedOwnersToDeleteQueue), processDeletingDependentsItem (no blocking
// dependent left once the reference is unblocked).
func cycleOfBlockingOwners() []step {
	a := configMap("a", "a", "uid-a")
	b := configMap("a", "b", "uid-b", owned(ownerRefTo(a, blocking)))
	a = changed(a, owned(ownerRefTo(b, blocking)))
	a.ResourceVersion, b.ResourceVersion = "1", "1"
	aWaiting := changed(a, deleting(), finalized(metav1.FinalizerDeleteDependents))
	bUnblocked := changed(b, owned(ownerRefTo(a, notBlocking)))
	bUnblocked.ResourceVersion = "2"
	conflictOnce := false
	return []step{
		store(a, b),
		informerSees(evAdd(a), evAdd(b)),
		expect(state{
			graph:           []*node{observedNode(a), observedNode(b)},
			attemptToDelete: []*node{observedNode(b)}, // queued as a's virtual owner, observed since
		}),
		processAttemptToDelete(1), // b's owner a is solid
		store(aWaiting),
		informerSees(evUpdate(a, aWaiting)),
		expect(state{
			graph:           []*node{observedNode(aWaiting), observedNode(b)},
			attemptToDelete: []*node{observedNode(b), observedNode(aWaiting)},
		}),
		// The patch moves b's resourceVersion: the apiserver refuses the delete that carries
		// the decision's (the fake keeps no resourceVersions, so it is told to).
		apiserverAnswers("delete", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
			if conflictOnce {
				return false, nil, nil
			}
			conflictOnce = true
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "b", errors.New("the object has been modified"))
		}),
		processAttemptToDelete(1),
		expect(state{
			graph:           []*node{observedNode(aWaiting), observedNode(b)},
			attemptToDelete: []*node{observedNode(aWaiting)},
			backoff:         []*node{observedNode(b)},
			writes:          []string{"patch configmaps a/b unblock owner uid-a", "delete configmaps a/b Foreground"},
		}),
		informerSees(evUpdate(b, bUnblocked)), // a is queued: b no longer blocks it (already queued)
		processAttemptToDelete(1),             // a: no blocking dependent left
		expect(state{
			graph:   []*node{observedNode(aWaiting), observedNode(bUnblocked)},
			backoff: []*node{observedNode(b)},
			writes:  []string{"patch configmaps a/a finalizers []"},
		}),
		informerSees(evDelete(aWaiting)),
		expect(state{
			graph:           []*node{observedNode(bUnblocked)},
			attemptToDelete: []*node{observedNode(bUnblocked)},
			backoff:         []*node{observedNode(b)},
			absent:          []objectReference{identityOf(a)},
		}),
		backoffElapses(),
		processAttemptToDelete(1), // b is decided again: its owner is gone
		expect(state{
			graph:  []*node{observedNode(bUnblocked)},
			writes: []string{"delete configmaps a/b Background"},
			absent: []objectReference{identityOf(a)},
		}),
		informerSees(evDelete(bUnblocked)),
		expect(state{absent: []objectReference{identityOf(a)}}),
	}
}

// upstream: processTransitions (startsWaitingForDependentsOrphaned → attemptToOrphan),
// attemptToOrphanWorker (orphanDependents, then removeFinalizer of orphan).
func orphanReferencesThenFinalizer() []step {
	owner := configMap("a", "owner", "uid-owner")
	other := configMap("a", "other", "uid-other")
	dep := configMap("a", "dep", "uid-dep", owned(ownerRefTo(owner, blocking, controls), ownerRefTo(other)))
	orphaning := changed(owner, deleting(), finalized(metav1.FinalizerOrphanDependents))
	orphaned := changed(dep, owned(ownerRefTo(other)))
	return []step{
		store(owner, other, dep),
		informerSees(evAdd(owner), evAdd(other), evAdd(dep)),
		store(orphaning), // deleted with propagationPolicy=Orphan
		informerSees(evUpdate(owner, orphaning)),
		expect(state{
			graph:           []*node{observedNode(orphaning), observedNode(other), observedNode(dep)},
			attemptToOrphan: []*node{observedNode(orphaning)},
		}),
		processAttemptToOrphan(1),
		expect(state{
			graph:  []*node{observedNode(orphaning), observedNode(other), observedNode(dep)},
			writes: []string{"patch configmaps a/dep remove owner uid-owner", "patch configmaps a/owner finalizers []"},
		}),
		informerSees(evUpdate(dep, orphaned)), // the removed reference was blocking: the owner is queued
		expect(state{
			graph:           []*node{observedNode(orphaning), observedNode(other), observedNode(orphaned)},
			attemptToDelete: []*node{observedNode(orphaning)},
		}),
		informerSees(evDelete(orphaning)),
		processAttemptToDelete(1), // the owner left the graph (upstream: a GET, a 404, a virtual delete finding no node)
		expect(state{graph: []*node{observedNode(other), observedNode(orphaned)}}),
	}
}
