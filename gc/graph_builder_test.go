package gc

// Step-scenario tests of the GraphBuilder, in upstream's style: every scenario builds a
// graph builder over a fresh graph, feeds it events by hand through processGraphChanges
// and, after every step, checks the graph's invariants and that the feed tells exactly
// the graph's state; each step then asserts what was queued and published.

import (
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestGraphBuilderAddsOwnerThenDependent(t *testing.T) {
	h := newBuilderHarness(t)
	d := deployment("a", "web", "uid-d")
	rs := replicaSet("a", "web-1", "uid-rs", owned(ownerRefTo(d, blocking, controls)))

	evs := h.step(evAdd(d))
	if got, want := eventTypes(evs), []EventType{NodeAdded}; !slices.Equal(got, want) {
		t.Errorf("adding the owner published %v, want %v", got, want)
	}
	dn := h.node("uid-d")
	if dn.virtual || dn.identity != identityOf(d) || len(dn.owners) != 0 {
		t.Errorf("owner node = %+v, want the observed deployment without owners", dn)
	}
	expectQueued(t, "attemptToDelete after the owner", h.gb.attemptToDelete)
	expectQueued(t, "attemptToOrphan after the owner", h.gb.attemptToOrphan)

	evs = h.step(evAdd(rs))
	if got, want := eventTypes(evs), []EventType{NodeAdded, EdgeAdded}; !slices.Equal(got, want) {
		t.Errorf("adding the dependent published %v, want %v", got, want)
	}
	if got, want := edgeEvents(evs), []edgeEvent{{EdgeAdded, Edge{Dependent: "uid-rs", Owner: "uid-d", Controller: true, BlockOwnerDeletion: true}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("edge events = %+v, want %+v", got, want)
	}
	expectDependents(t, h.node("uid-d"), "uid-rs")
	if h.node("uid-d") != dn {
		t.Error("the owner node was replaced when a dependent was added")
	}
	if got := h.node("uid-rs").owners; !reflect.DeepEqual(got, rs.OwnerReferences) {
		t.Errorf("dependent owners = %v, want %v", got, rs.OwnerReferences)
	}
	expectQueued(t, "attemptToDelete after the dependent", h.gb.attemptToDelete)
	if h.gb.graph.virtuals != 0 {
		t.Errorf("virtuals = %d, want 0", h.gb.graph.virtuals)
	}
}

func TestGraphBuilderDependentBeforeOwnerCreatesVirtualOwner(t *testing.T) {
	h := newBuilderHarness(t)
	d := deployment("a", "web", "uid-d")
	rs := replicaSet("a", "web-1", "uid-rs", owned(ownerRefTo(d, blocking, controls)))

	evs := h.step(evAdd(rs))
	v := h.node("uid-d")
	if !v.virtual {
		t.Fatal("the owner named by the dependent is not virtual")
	}
	if want := refIdentity("apps/v1", "Deployment", "a", "web", "uid-d"); v.identity != want {
		t.Errorf("virtual owner identity = %s, want %s (the reference's coordinates in the dependent's namespace)", v.identity, want)
	}
	expectDependents(t, v, "uid-rs")
	if h.gb.graph.virtuals != 1 {
		t.Errorf("virtuals = %d, want 1", h.gb.graph.virtuals)
	}
	q := queueEvents(evs, AttemptToDelete)
	if len(q) != 1 || q[0].Op != QueueAdded || q[0].Object.UID != "uid-d" || q[0].Object.Kind != "Deployment" {
		t.Errorf("attemptToDelete feed events = %+v, want one %q of the virtual deployment", q, QueueAdded)
	}
	got := expectQueued(t, "attemptToDelete after the dependent", h.gb.attemptToDelete, "uid-d")
	if len(got) == 1 && got[0] != v {
		t.Error("the queued item is not the graph's virtual node")
	}

	evs = h.step(evAdd(d))
	if h.node("uid-d") != v {
		t.Error("observing the owner under the identity it was named by replaced its node")
	}
	if v.virtual {
		t.Error("the observed owner is still virtual")
	}
	if h.gb.graph.virtuals != 0 {
		t.Errorf("virtuals = %d, want 0", h.gb.graph.virtuals)
	}
	expectDependents(t, v, "uid-rs")
	if q := queueEvents(evs, AttemptToDelete); len(q) != 0 {
		t.Errorf("observing the owner queued %+v, want nothing", q)
	}
	expectQueued(t, "attemptToDelete after observing the owner", h.gb.attemptToDelete)
	var updated *NodeState
	for _, e := range evs {
		if e.Type == NodeUpdated && e.Node.UID == "uid-d" {
			updated = e.Node
		}
	}
	if updated == nil || updated.Virtual || !updated.Observed {
		t.Errorf("feed: last update of the owner = %+v, want it observed and not virtual", updated)
	}
}

func TestGraphBuilderOwnerReferenceDiffOnUpdate(t *testing.T) {
	h := newBuilderHarness(t)
	a := deployment("a", "a", "uid-a")
	b := deployment("a", "b", "uid-b")
	c := deployment("a", "c", "uid-c")
	p := pod("a", "p", "uid-p", owned(ownerRefTo(a), ownerRefTo(b)))
	for _, o := range []*metav1.PartialObjectMetadata{a, b, c, p} {
		h.step(evAdd(o))
	}
	expectDependents(t, h.node("uid-a"), "uid-p")
	expectDependents(t, h.node("uid-b"), "uid-p")

	// a removed, b now the controller, c added.
	p2 := changed(p, owned(ownerRefTo(b, controls), ownerRefTo(c)))
	evs := h.step(evUpdate(p, p2))
	want := []edgeEvent{
		{EdgeRemoved, Edge{Dependent: "uid-p", Owner: "uid-a"}},
		{EdgeAdded, Edge{Dependent: "uid-p", Owner: "uid-b", Controller: true}},
		{EdgeAdded, Edge{Dependent: "uid-p", Owner: "uid-c"}},
	}
	if got := edgeEvents(evs); !reflect.DeepEqual(got, want) {
		t.Errorf("edge events = %+v, want %+v", got, want)
	}
	expectDependents(t, h.node("uid-a"))
	expectDependents(t, h.node("uid-b"), "uid-p")
	expectDependents(t, h.node("uid-c"), "uid-p")
	if got := h.node("uid-p").owners; !reflect.DeepEqual(got, p2.OwnerReferences) {
		t.Errorf("owners = %v, want %v", got, p2.OwnerReferences)
	}
	// None of the references blocked: nothing to unblock.
	expectQueued(t, "attemptToDelete", h.gb.attemptToDelete)

	// Adding a reference to an owner not in the graph creates it virtual and queues it.
	x := ownerRefTo(deployment("a", "x", "uid-x"))
	p3 := changed(p2, owned(ownerRefTo(b, controls), ownerRefTo(c), x))
	evs = h.step(evUpdate(p2, p3))
	if got, want := edgeEvents(evs), []edgeEvent{{EdgeAdded, Edge{Dependent: "uid-p", Owner: "uid-x"}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("edge events = %+v, want %+v", got, want)
	}
	if !h.node("uid-x").virtual {
		t.Error("the newly referenced owner is not virtual")
	}
	expectQueued(t, "attemptToDelete", h.gb.attemptToDelete, "uid-x")

	// An update that leaves the references alone publishes no edge event.
	p4 := changed(p3, finalized("example.com/hold"))
	if got := edgeEvents(h.step(evUpdate(p3, p4))); len(got) != 0 {
		t.Errorf("an update without reference changes published edges %+v", got)
	}
	if got := h.node("uid-p").finalizers; !slices.Equal(got, []string{"example.com/hold"}) {
		t.Errorf("finalizers = %v, want the updated ones", got)
	}
}

func TestGraphBuilderOrphanFinalizerQueuesAttemptToOrphan(t *testing.T) {
	h := newBuilderHarness(t)
	o := configMap("a", "owner", "uid-o")
	p := pod("a", "p", "uid-p", owned(ownerRefTo(o, blocking)))
	h.step(evAdd(o))
	h.step(evAdd(p))

	o2 := changed(o, deleting(), finalized(metav1.FinalizerOrphanDependents))
	h.step(evUpdate(o, o2))
	got := expectQueued(t, "attemptToOrphan when deletion starts with the orphan finalizer", h.gb.attemptToOrphan, "uid-o")
	if len(got) == 1 && got[0] != h.node("uid-o") {
		t.Error("the queued item is not the graph's node")
	}
	expectQueued(t, "attemptToDelete", h.gb.attemptToDelete)
	n := h.node("uid-o")
	if !n.beingDeleted || n.deletingDependents {
		t.Errorf("beingDeleted=%v deletingDependents=%v, want true false", n.beingDeleted, n.deletingDependents)
	}

	// Still being deleted with the finalizer: not a transition, nothing queued.
	o3 := changed(o2, finalized(metav1.FinalizerOrphanDependents, "example.com/hold"))
	h.step(evUpdate(o2, o3))
	expectQueued(t, "attemptToOrphan on a later update", h.gb.attemptToOrphan)

	// An object first seen while already being deleted with the finalizer (a restart).
	late := configMap("a", "late", "uid-late", deleting(), finalized(metav1.FinalizerOrphanDependents))
	h.step(evAdd(late))
	expectQueued(t, "attemptToOrphan for an add already being deleted", h.gb.attemptToOrphan, "uid-late")

	// Being deleted without the orphan finalizer: no orphaning.
	other := configMap("a", "other", "uid-other")
	h.step(evAdd(other))
	h.step(evUpdate(other, changed(other, deleting(), finalized("example.com/hold"))))
	expectQueued(t, "attemptToOrphan for a deletion without the finalizer", h.gb.attemptToOrphan)
	expectQueued(t, "attemptToDelete", h.gb.attemptToDelete)
}

func TestGraphBuilderForegroundDeletionQueuesNodeAndDependents(t *testing.T) {
	h := newBuilderHarness(t)
	o := deployment("a", "web", "uid-o")
	p1 := pod("a", "p1", "uid-p1", owned(ownerRefTo(o, blocking)))
	p2 := pod("a", "p2", "uid-p2", owned(ownerRefTo(o, notBlocking)))
	for _, obj := range []*metav1.PartialObjectMetadata{o, p1, p2} {
		h.step(evAdd(obj))
	}

	o2 := changed(o, deleting(), finalized(metav1.FinalizerDeleteDependents))
	evs := h.step(evUpdate(o, o2))
	n := h.node("uid-o")
	if !n.beingDeleted || !n.deletingDependents {
		t.Errorf("beingDeleted=%v deletingDependents=%v, want both true", n.beingDeleted, n.deletingDependents)
	}
	// The dependents first, in uid order, then the node itself.
	expectQueued(t, "attemptToDelete when a foreground deletion starts", h.gb.attemptToDelete, "uid-p1", "uid-p2", "uid-o")
	expectQueued(t, "attemptToOrphan", h.gb.attemptToOrphan)
	var st *NodeState
	for _, e := range evs {
		if e.Type == NodeUpdated && e.Node.UID == "uid-o" {
			st = e.Node
		}
	}
	if st == nil || !st.DeletingDependents || !st.BeingDeleted || st.DeletionTimestamp == nil || !st.DeletionTimestamp.Equal(testDeletionTime.Time) {
		t.Errorf("feed: owner update = %+v, want deletingDependents, beingDeleted and the deletion timestamp", st)
	}
	if got := n.blockingDependents(); !slices.Equal(uidsOf(got), []types.UID{"uid-p1"}) {
		t.Errorf("blocking dependents = %v, want [uid-p1]", uidsOf(got))
	}

	// The collector removes foregroundDeletion while another finalizer holds the object:
	// nothing queued, and the mark stays (one-way, as upstream's markDeletingDependents).
	o3 := changed(o2, finalized("example.com/hold"))
	h.step(evUpdate(o2, o3))
	if n := h.node("uid-o"); !n.beingDeleted || !n.deletingDependents {
		t.Errorf("after the finalizer went: beingDeleted=%v deletingDependents=%v, want both still true", n.beingDeleted, n.deletingDependents)
	}
	expectQueued(t, "attemptToDelete after the finalizer went", h.gb.attemptToDelete)

	// A virtual node observed while already deleting its dependents.
	q := pod("a", "q", "uid-q", owned(ownerRefTo(deployment("a", "late", "uid-late"), blocking)))
	h.step(evAdd(q))
	expectQueued(t, "attemptToDelete for the virtual owner", h.gb.attemptToDelete, "uid-late")
	h.step(evAdd(deployment("a", "late", "uid-late", deleting(), finalized(metav1.FinalizerDeleteDependents))))
	if !h.node("uid-late").deletingDependents {
		t.Error("the owner observed during its foreground deletion is not deletingDependents")
	}
	expectQueued(t, "attemptToDelete for an owner observed during a foreground deletion", h.gb.attemptToDelete, "uid-q", "uid-late")
}

func TestGraphBuilderUnblockingQueuesOwner(t *testing.T) {
	for _, tc := range []struct {
		name       string
		before     refOption
		afterBlock refOption // nil: the reference is removed
		wantQueued bool
	}{
		{name: "blocking reference removed", before: blocking, wantQueued: true},
		{name: "blocking reference made non-blocking", before: blocking, afterBlock: notBlocking, wantQueued: true},
		{name: "blocking reference with blockOwnerDeletion unset", before: blocking, afterBlock: func(r *metav1.OwnerReference) { r.BlockOwnerDeletion = nil }, wantQueued: true},
		{name: "non-blocking reference removed", before: notBlocking, wantQueued: false},
		{name: "non-blocking reference made blocking", before: notBlocking, afterBlock: blocking, wantQueued: false},
		{name: "blocking reference made controller", before: blocking, afterBlock: func(r *metav1.OwnerReference) { blocking(r); controls(r) }, wantQueued: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newBuilderHarness(t)
			o := deployment("a", "web", "uid-o")
			p := pod("a", "p", "uid-p", owned(ownerRefTo(o, tc.before)))
			h.step(evAdd(o))
			h.step(evAdd(p))
			expectQueued(t, "attemptToDelete after setup", h.gb.attemptToDelete)

			p2 := changed(p, owned())
			if tc.afterBlock != nil {
				p2 = changed(p, owned(ownerRefTo(o, tc.afterBlock)))
			}
			h.step(evUpdate(p, p2))
			var want []types.UID
			if tc.wantQueued {
				want = []types.UID{"uid-o"}
			}
			expectQueued(t, "attemptToDelete", h.gb.attemptToDelete, want...)
			if tc.afterBlock == nil {
				expectDependents(t, h.node("uid-o"))
			} else {
				expectDependents(t, h.node("uid-o"), "uid-p")
			}
		})
	}
}

func TestGraphBuilderDependentDeleteQueuesWaitingOwner(t *testing.T) {
	h := newBuilderHarness(t)
	waiting := deployment("a", "waiting", "uid-w")
	idle := deployment("a", "idle", "uid-i")
	p := pod("a", "p", "uid-p", owned(ownerRefTo(waiting, blocking), ownerRefTo(idle, blocking)))
	for _, o := range []*metav1.PartialObjectMetadata{waiting, idle, p} {
		h.step(evAdd(o))
	}
	h.step(evUpdate(waiting, changed(waiting, deleting(), finalized(metav1.FinalizerDeleteDependents))))
	expectQueued(t, "attemptToDelete when the foreground deletion starts", h.gb.attemptToDelete, "uid-p", "uid-w")

	pGone := changed(p, deleting())
	evs := h.step(evDelete(pGone))
	if h.hasNode("uid-p") {
		t.Error("the deleted dependent is still in the graph")
	}
	// Only the owner waiting for its dependents is queued, not the idle one.
	expectQueued(t, "attemptToDelete when the dependent goes", h.gb.attemptToDelete, "uid-w")
	expectDependents(t, h.node("uid-w"))
	expectDependents(t, h.node("uid-i"))
	want := []edgeEvent{
		{EdgeRemoved, Edge{Dependent: "uid-p", Owner: "uid-w", BlockOwnerDeletion: true}},
		{EdgeRemoved, Edge{Dependent: "uid-p", Owner: "uid-i", BlockOwnerDeletion: true}},
	}
	if got := edgeEvents(evs); !reflect.DeepEqual(got, want) {
		t.Errorf("edge events = %+v, want %+v", got, want)
	}
	// A dependent without dependents of its own says nothing about absent owners.
	if n := h.gb.absentOwnerCache.Len(); n != 0 {
		t.Errorf("absent-owner cache holds %d entries, want 0", n)
	}
}

func TestGraphBuilderOwnerDeleteQueuesDependentsAndRecordsAbsence(t *testing.T) {
	h := newBuilderHarness(t)
	o := deployment("a", "web", "uid-o")
	p1 := pod("a", "p1", "uid-p1", owned(ownerRefTo(o)))
	p2 := pod("a", "p2", "uid-p2", owned(ownerRefTo(o)))
	for _, obj := range []*metav1.PartialObjectMetadata{o, p1, p2} {
		h.step(evAdd(obj))
	}
	h.step(evDelete(o))
	if h.hasNode("uid-o") {
		t.Error("the deleted owner is still in the graph")
	}
	expectQueued(t, "attemptToDelete", h.gb.attemptToDelete, "uid-p1", "uid-p2")
	if !h.gb.absentOwnerCache.Has(identityOf(o)) {
		t.Errorf("absent-owner cache lacks the deleted owner %s", identityOf(o))
	}
	// The dependents keep their (now dangling) references; the collector removes them.
	if got := h.node("uid-p1").owners; len(got) != 1 || got[0].UID != "uid-o" {
		t.Errorf("dependent owners = %v, want the dangling reference kept", got)
	}
	// A delete of something not in the graph is a no-op.
	before := h.feed.LastSeq()
	h.step(evDelete(pod("a", "ghost", "uid-ghost")))
	if h.feed.LastSeq() != before {
		t.Error("deleting an unknown object published events")
	}
}

func TestReferencesDiffs(t *testing.T) {
	a := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "a", UID: "uid-a"}
	b := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "b", UID: "uid-b", BlockOwnerDeletion: ptr.To(true)}
	bFalse := b
	bFalse.BlockOwnerDeletion = ptr.To(false)
	bNil := b
	bNil.BlockOwnerDeletion = nil
	c := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "c", UID: "uid-c"}
	aFalse := a
	aFalse.Controller = ptr.To(false)

	added, removed, ch := referencesDiffs([]metav1.OwnerReference{a, b}, []metav1.OwnerReference{bFalse, c})
	if !reflect.DeepEqual(added, []metav1.OwnerReference{c}) || !reflect.DeepEqual(removed, []metav1.OwnerReference{a}) ||
		!reflect.DeepEqual(ch, []ownerRefPair{{oldRef: b, newRef: bFalse}}) {
		t.Errorf("diffs = added %v removed %v changed %v", added, removed, ch)
	}
	// An unset flag and false are the same edge.
	added, removed, ch = referencesDiffs([]metav1.OwnerReference{a, bFalse}, []metav1.OwnerReference{aFalse, bNil})
	if len(added)+len(removed)+len(ch) != 0 {
		t.Errorf("nil vs false flags: added %v removed %v changed %v, want no change", added, removed, ch)
	}
}

func TestPartitionDependents(t *testing.T) {
	owner := refIdentity("apps/v1", "ReplicaSet", "a", "rs", "uid-u")
	match := &node{identity: refIdentity("v1", "Pod", "a", "m", "uid-m"), owners: []metav1.OwnerReference{owner.OwnerReference}}
	wrongKind := &node{identity: refIdentity("v1", "Pod", "a", "k", "uid-k"), owners: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "rs", UID: "uid-u"}}}
	otherNS := &node{identity: refIdentity("v1", "Pod", "b", "n", "uid-n"), owners: []metav1.OwnerReference{owner.OwnerReference}}
	matching, mismatched := partitionDependents([]*node{match, wrongKind, otherNS}, owner)
	if !slices.Equal(uidsOf(matching), []types.UID{"uid-m"}) || !slices.Equal(uidsOf(mismatched), []types.UID{"uid-k", "uid-n"}) {
		t.Errorf("matching %v mismatched %v, want [uid-m] [uid-k uid-n]", uidsOf(matching), uidsOf(mismatched))
	}
	// A cluster-scoped owner matches dependents of every namespace.
	cluster := owner
	cluster.Namespace = ""
	matching, mismatched = partitionDependents([]*node{match, otherNS}, cluster)
	if len(matching) != 2 || len(mismatched) != 0 {
		t.Errorf("cluster-scoped owner: matching %v mismatched %v, want both matching", uidsOf(matching), uidsOf(mismatched))
	}
}
