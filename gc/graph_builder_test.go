package gc

// Step-scenario tests of the GraphBuilder, in upstream's style: every scenario builds a
// graph builder over a fresh graph, feeds it events by hand through processGraphChanges
// and, after every step, checks the graph's invariants and that the feed tells exactly
// the graph's state; each step then asserts what was queued and published.

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gcscope/gcscope/internal/testkit"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// --- objects and events ---

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

func blocking(r *metav1.OwnerReference)    { r.BlockOwnerDeletion = ptr.To(true) }
func notBlocking(r *metav1.OwnerReference) { r.BlockOwnerDeletion = ptr.To(false) }
func controls(r *metav1.OwnerReference)    { r.Controller = ptr.To(true) }

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

// --- invariants ---

// verifyGraphInvariants checks, as upstream's verifyGraphInvariants does, that the graph is
// consistent: every dependent edge matches an owner reference of the dependent, whose owner
// node exists; every owner reference of an observed node whose owner is in the graph is
// reflected in that owner's dependents; and graph.virtuals counts the virtual nodes.
func verifyGraphInvariants(t testing.TB, g *graph) {
	t.Helper()
	verifyGraphInvariantsExcept(t, g, nil)
}

// verifyGraphInvariantsExcept is verifyGraphInvariants, except that an owner reference of
// an observed node need not be reflected in the owner's dependents when the owner is a
// virtual node of a uid in recreated: a uid removed from the graph earlier (its owner was
// deleted or verified absent) that a later dependent named again, creating a new virtual
// node that does not know the dependents still holding their dangling references (as
// upstream's graph does not either).
func verifyGraphInvariantsExcept(t testing.TB, g *graph, recreated map[types.UID]bool) {
	t.Helper()
	g.mu.RLock()
	defer g.mu.RUnlock()
	virtuals := 0
	for uid, n := range g.uidToNode {
		if n.identity.UID != uid {
			t.Errorf("invariant: node %s is indexed under uid %s", n.identity, uid)
		}
		if n.virtual {
			virtuals++
			if len(n.owners) != 0 {
				t.Errorf("invariant: virtual node %s has owners %v", n.identity, n.owners)
			}
		}
		for dep := range n.dependents {
			if inGraph := g.uidToNode[dep.identity.UID]; inGraph != dep {
				t.Errorf("invariant: %s lists dependent %s, which is not the graph's node for its uid (graph has %p, edge has %p)",
					n.identity, dep.identity, inGraph, dep)
			}
			if !slices.ContainsFunc(dep.owners, func(r metav1.OwnerReference) bool { return r.UID == uid }) {
				t.Errorf("invariant: %s lists dependent %s, whose owner references %v do not name it", n.identity, dep.identity, dep.owners)
			}
		}
		if n.virtual {
			continue
		}
		for _, ref := range n.owners {
			owner, ok := g.uidToNode[ref.UID]
			if !ok {
				continue
			}
			if _, ok := owner.dependents[n]; !ok {
				if owner.virtual && recreated[ref.UID] {
					continue
				}
				t.Errorf("invariant: %s names owner %s (uid %s), which is in the graph but does not list it as a dependent", n.identity, owner.identity, ref.UID)
			}
		}
	}
	if virtuals != g.virtuals {
		t.Errorf("invariant: graph.virtuals = %d, but %d nodes are virtual", g.virtuals, virtuals)
	}
}

// --- the harness ---

type recordedWarning struct {
	obj             objectReference
	reason, message string
}

// builderHarness is a GraphBuilder on a fresh graph, feed and queues, stepped by hand.
type builderHarness struct {
	t        *testing.T
	gb       *GraphBuilder
	feed     *Feed
	warnings []recordedWarning
	// mirror is the graph as the feed's node events tell it.
	mirror map[types.UID]NodeState
}

func describeTestNode(n *node) (ObjectRef, string) { return refOf(n.identity), "" }

func newBuilderHarness(t *testing.T) *builderHarness {
	feed := newFeed(1<<16, time.Now)
	qm := newQueueMetrics(prometheus.NewRegistry())
	h := &builderHarness{t: t, feed: feed, mirror: map[types.UID]NodeState{}}
	h.gb = &GraphBuilder{
		graph:            newGraph(),
		feed:             feed,
		graphChanges:     newWorkQueue(GraphChanges, feed, qm, (*event).describe),
		attemptToDelete:  newWorkQueue(AttemptToDelete, feed, qm, describeTestNode),
		attemptToOrphan:  newWorkQueue(AttemptToOrphan, feed, qm, describeTestNode),
		absentOwnerCache: NewReferenceCache(absentOwnerCacheSize),
		deletedUIDs:      newUIDSet(),
		warn: func(obj objectReference, reason, message string) {
			h.warnings = append(h.warnings, recordedWarning{obj, reason, message})
		},
	}
	t.Cleanup(func() {
		h.gb.graphChanges.ShutDown()
		h.gb.attemptToDelete.ShutDown()
		h.gb.attemptToOrphan.ShutDown()
	})
	return h
}

// step processes one event as the graph builder's goroutine does, checks the invariants and
// the feed, and returns the feed events the step published.
func (h *builderHarness) step(ev *event) []Event {
	h.t.Helper()
	before := h.feed.LastSeq()
	h.gb.graph.mu.Lock()
	h.gb.processGraphChanges(ev)
	h.gb.graph.mu.Unlock()
	evs, err := h.feed.Since(before, 0)
	if err != nil {
		h.t.Fatalf("feed: %v", err)
	}
	verifyGraphInvariants(h.t, h.gb.graph)
	applyNodeEvents(h.mirror, evs)
	h.checkMirror()
	return evs
}

// applyNodeEvents applies the node events of evs to nodes: added and updated nodes are
// upserted, removed ones deleted.
func applyNodeEvents(nodes map[types.UID]NodeState, evs []Event) {
	for _, e := range evs {
		switch e.Type {
		case NodeAdded, NodeUpdated:
			nodes[e.Node.UID] = *e.Node
		case NodeRemoved:
			delete(nodes, e.Node.UID)
		}
	}
}

// checkMirror: the nodes the feed told of are exactly the graph's.
func (h *builderHarness) checkMirror() {
	h.t.Helper()
	g := h.gb.graph
	g.mu.RLock()
	defer g.mu.RUnlock()
	for uid, n := range g.uidToNode {
		got, ok := h.mirror[uid]
		if !ok {
			h.t.Errorf("feed: node %s is in the graph but the feed never told of it", n.identity)
			continue
		}
		if want := *stateOf(n); !reflect.DeepEqual(got, want) {
			h.t.Errorf("feed: node %s is told as\n%+v\nbut the graph has\n%+v", n.identity, got, want)
		}
	}
	for uid := range h.mirror {
		if _, ok := g.uidToNode[uid]; !ok {
			h.t.Errorf("feed: node %s is told but not in the graph", uid)
		}
	}
}

func (h *builderHarness) node(uid types.UID) *node {
	h.t.Helper()
	h.gb.graph.mu.RLock()
	defer h.gb.graph.mu.RUnlock()
	n, ok := h.gb.graph.read(uid)
	if !ok {
		h.t.Fatalf("no node %s in the graph", uid)
	}
	return n
}

func (h *builderHarness) hasNode(uid types.UID) bool {
	h.gb.graph.mu.RLock()
	defer h.gb.graph.mu.RUnlock()
	_, ok := h.gb.graph.read(uid)
	return ok
}

// drain takes every item queued now, as a worker would, and returns them in queue order.
func drainQueue(q *workQueue[*node]) []*node {
	var out []*node
	for q.Len() > 0 {
		n, shutdown := q.Get()
		if shutdown {
			break
		}
		q.Done(n)
		out = append(out, n)
	}
	return out
}

func uidsOf(ns []*node) []types.UID {
	out := make([]types.UID, len(ns))
	for i, n := range ns {
		out[i] = n.identity.UID
	}
	return out
}

func dependentUIDs(n *node) []types.UID {
	var out []types.UID
	for d := range n.dependents {
		out = append(out, d.identity.UID)
	}
	slices.Sort(out)
	return out
}

func sortedUIDs(uids ...types.UID) []types.UID {
	out := slices.Clone(uids)
	slices.Sort(out)
	if out == nil {
		out = []types.UID{}
	}
	return out
}

// expectQueued drains q and checks it held exactly want, in that order.
func expectQueued(t *testing.T, what string, q *workQueue[*node], want ...types.UID) []*node {
	t.Helper()
	got := drainQueue(q)
	if g := uidsOf(got); !slices.Equal(g, want) {
		t.Errorf("%s: queued %v, want %v", what, g, want)
	}
	return got
}

// expectQueuedSet drains q and checks it held exactly want, in any order.
func expectQueuedSet(t *testing.T, what string, q *workQueue[*node], want ...types.UID) []*node {
	t.Helper()
	got := drainQueue(q)
	if g, w := sortedUIDs(uidsOf(got)...), sortedUIDs(want...); !slices.Equal(g, w) {
		t.Errorf("%s: queued %v, want %v (any order)", what, g, w)
	}
	return got
}

func expectDependents(t *testing.T, n *node, want ...types.UID) {
	t.Helper()
	if got, w := dependentUIDs(n), sortedUIDs(want...); !slices.Equal(sortedUIDs(got...), w) {
		t.Errorf("dependents of %s = %v, want %v", n.identity, got, w)
	}
}

func eventTypes(evs []Event) []EventType {
	var out []EventType
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

func queueEvents(evs []Event, q QueueName) []QueueEvent {
	var out []QueueEvent
	for _, e := range evs {
		if e.Type == QueueChange && e.Queue.Queue == q {
			out = append(out, *e.Queue)
		}
	}
	return out
}

type edgeEvent struct {
	Type EventType
	Edge Edge
}

func edgeEvents(evs []Event) []edgeEvent {
	var out []edgeEvent
	for _, e := range evs {
		if e.Type == EdgeAdded || e.Type == EdgeRemoved {
			out = append(out, edgeEvent{e.Type, *e.Edge})
		}
	}
	return out
}

// --- scenarios ---

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

func TestGraphBuilderVirtualIdentitySwitching(t *testing.T) {
	h := newBuilderHarness(t)
	// Two dependents name owner uid-u with different kinds and names.
	asRS := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-x", UID: "uid-u", BlockOwnerDeletion: ptr.To(true)}
	asDeploy := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d-x", UID: "uid-u"}
	p1 := pod("a", "p1", "uid-p1", owned(asRS))
	p2 := pod("a", "p2", "uid-p2", owned(asDeploy))
	rsIdentity := refIdentity("apps/v1", "ReplicaSet", "a", "rs-x", "uid-u")
	deployIdentity := refIdentity("apps/v1", "Deployment", "a", "d-x", "uid-u")

	h.step(evAdd(p1))
	v := h.node("uid-u")
	if v.identity != rsIdentity || !v.virtual {
		t.Fatalf("virtual owner = %s (virtual %v), want %s", v.identity, v.virtual, rsIdentity)
	}
	expectQueued(t, "attemptToDelete after the first dependent", h.gb.attemptToDelete, "uid-u")
	h.step(evAdd(p2))
	drainQueue(h.gb.attemptToDelete) // whether p2 is queued here is checked by TestGraphBuilderQueuesDependentWhoseReferenceMismatchesOwner
	if h.node("uid-u") != v || v.identity != rsIdentity {
		t.Fatalf("the second dependent changed the owner node: %s", h.node("uid-u").identity)
	}
	expectDependents(t, v, "uid-p1", "uid-p2")

	// A worker found the ReplicaSet identity absent.
	evs := h.step(evVirtualDelete(rsIdentity))
	r := h.node("uid-u")
	if r == v {
		t.Error("the node was changed in place; its identity must change by replacement")
	}
	if r.identity != deployIdentity {
		t.Errorf("identity after the virtual delete = %s, want the alternate %s", r.identity, deployIdentity)
	}
	if !r.virtual {
		t.Error("the replacement is not virtual")
	}
	if v.identity != rsIdentity {
		t.Errorf("the replaced node's identity changed to %s", v.identity)
	}
	expectDependents(t, r, "uid-p1", "uid-p2")
	if h.gb.graph.virtuals != 1 {
		t.Errorf("virtuals = %d, want 1", h.gb.graph.virtuals)
	}
	if !h.gb.absentOwnerCache.Has(rsIdentity) {
		t.Errorf("absent-owner cache lacks %s", rsIdentity)
	}
	if h.gb.absentOwnerCache.Has(deployIdentity) {
		t.Errorf("absent-owner cache holds %s, which nobody verified", deployIdentity)
	}
	// The dependent naming the absent identity is queued now; the replacement with backoff.
	q := queueEvents(evs, AttemptToDelete)
	var p1Added, rAddedAfter, rAddedEarly bool
	for _, e := range q {
		switch {
		case e.Object.UID == "uid-p1" && e.Op == QueueAdded:
			p1Added = true
		case e.Object.UID == "uid-u" && e.Op == QueueAddedAfter:
			rAddedAfter = true
			if e.Object.Kind != "Deployment" || e.Object.Name != "d-x" || e.Delay <= 0 || e.Retries < 1 {
				t.Errorf("addedAfter event = %+v, want the Deployment identity with a positive delay and a retry count", e)
			}
		case e.Object.UID == "uid-u" && e.Op == QueueAdded && !rAddedAfter:
			rAddedEarly = true
		case e.Object.UID == "uid-p2":
			t.Errorf("the dependent naming the unverified identity was queued: %+v", e)
		}
	}
	if !p1Added {
		t.Errorf("feed: p1 was not queued to attemptToDelete: %+v", q)
	}
	if !rAddedAfter || rAddedEarly {
		t.Errorf("feed: the replacement must be queued with AddRateLimited (addedAfter, then added): %+v", q)
	}
	var upd *NodeState
	for _, e := range evs {
		if e.Type == NodeUpdated && e.Node.UID == "uid-u" {
			upd = e.Node
		}
	}
	if upd == nil || upd.Kind != "Deployment" || upd.Name != "d-x" || !upd.Virtual {
		t.Errorf("feed: node update = %+v, want the virtual Deployment identity", upd)
	}
	// p1 now; the replacement after its backoff.
	got := drainQueue(h.gb.attemptToDelete)
	if len(got) == 0 || got[0].identity.UID != "uid-p1" {
		t.Errorf("attemptToDelete = %v, want p1 first", uidsOf(got))
	}
	sawReplacement := slices.Contains(got, r)
	deadline := time.Now().Add(5 * time.Second)
	for !sawReplacement && time.Now().Before(deadline) {
		if testkit.Poll(context.Background(), time.Until(deadline), func() bool { return h.gb.attemptToDelete.Len() > 0 }) != nil {
			break
		}
		n, _ := h.gb.attemptToDelete.Get()
		h.gb.attemptToDelete.Done(n)
		if n != r {
			t.Errorf("queued %s, want only the replacement node", n.identity)
		}
		sawReplacement = n == r
	}
	if !sawReplacement {
		t.Fatal("the replacement node never reached attemptToDelete after its backoff")
	}

	// The Deployment identity is absent too: the next identity is tried (the cycle returns
	// to the ReplicaSet, which p1 still names), and p2 is queued.
	h.step(evVirtualDelete(deployIdentity))
	r2 := h.node("uid-u")
	if r2.identity != rsIdentity || !r2.virtual || r2 == r {
		t.Errorf("after the second virtual delete: %s virtual=%v replaced=%v, want a replacement with %s", r2.identity, r2.virtual, r2 != r, rsIdentity)
	}
	if !h.gb.absentOwnerCache.Has(deployIdentity) {
		t.Errorf("absent-owner cache lacks %s", deployIdentity)
	}
	if got := drainQueue(h.gb.attemptToDelete); len(got) == 0 || got[0].identity.UID != "uid-p2" {
		t.Errorf("attemptToDelete = %v, want p2 first", uidsOf(got))
	}

	// The dependents go; a virtual delete of an owner nobody names removes it.
	h.step(evDelete(p1))
	h.step(evDelete(p2))
	expectDependents(t, h.node("uid-u"))
	h.step(evVirtualDelete(rsIdentity))
	if h.hasNode("uid-u") {
		t.Error("a virtual owner without dependents survived its virtual delete")
	}
	if h.gb.graph.virtuals != 0 {
		t.Errorf("virtuals = %d, want 0", h.gb.graph.virtuals)
	}
}

func TestGraphBuilderVirtualDeleteOfOtherIdentityKeepsObservedOwner(t *testing.T) {
	h := newBuilderHarness(t)
	rs := replicaSet("a", "rs-x", "uid-u")
	good := pod("a", "good", "uid-good", owned(ownerRefTo(rs)))
	badRef := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "other-name", UID: "uid-u"}
	bad := pod("a", "bad", "uid-bad", owned(badRef))
	for _, o := range []*metav1.PartialObjectMetadata{rs, good, bad} {
		h.step(evAdd(o))
	}
	drainQueue(h.gb.attemptToDelete)
	n := h.node("uid-u")

	// A worker verified the coordinates bad uses are absent.
	absent := refIdentity("apps/v1", "ReplicaSet", "a", "other-name", "uid-u")
	h.step(evVirtualDelete(absent))
	if h.node("uid-u") != n || n.virtual || n.identity != identityOf(rs) {
		t.Errorf("the observed owner changed: %s virtual=%v", h.node("uid-u").identity, h.node("uid-u").virtual)
	}
	expectQueued(t, "attemptToDelete", h.gb.attemptToDelete, "uid-bad")
	if !h.gb.absentOwnerCache.Has(absent) {
		t.Errorf("absent-owner cache lacks %s", absent)
	}
	if h.gb.absentOwnerCache.Has(identityOf(rs)) {
		t.Error("absent-owner cache holds the observed owner")
	}
}

func TestGraphBuilderObservedOwnerIdentityMismatchQueuesDisagreeingDependents(t *testing.T) {
	h := newBuilderHarness(t)
	asDeploy := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d-x", UID: "uid-u"}
	asRS := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-x", UID: "uid-u"}
	p2 := pod("a", "p2", "uid-p2", owned(asDeploy)) // names the owner first, with the wrong kind
	p1 := pod("a", "p1", "uid-p1", owned(asRS))
	p3 := pod("b", "p3", "uid-p3", owned(asRS)) // right coordinates, wrong namespace
	h.step(evAdd(p2))
	h.step(evAdd(p1))
	h.step(evAdd(p3))
	v := h.node("uid-u")
	if v.identity != refIdentity("apps/v1", "Deployment", "a", "d-x", "uid-u") {
		t.Fatalf("virtual identity = %s, want the first dependent's", v.identity)
	}
	drainQueue(h.gb.attemptToDelete)
	if len(h.warnings) != 0 {
		t.Errorf("warnings before the owner is observed: %+v, want none (the owner is virtual)", h.warnings)
	}

	rs := replicaSet("a", "rs-x", "uid-u")
	h.step(evAdd(rs))
	n := h.node("uid-u")
	if n.virtual || n.identity != identityOf(rs) {
		t.Errorf("owner = %s virtual=%v, want the observed %s", n.identity, n.virtual, identityOf(rs))
	}
	if n == v {
		t.Error("the node's identity was changed in place; it must be replaced")
	}
	expectDependents(t, n, "uid-p1", "uid-p2", "uid-p3")
	if h.gb.graph.virtuals != 0 {
		t.Errorf("virtuals = %d, want 0", h.gb.graph.virtuals)
	}
	// The dependents that disagree with the observed coordinates are checked again.
	expectQueuedSet(t, "attemptToDelete", h.gb.attemptToDelete, "uid-p2", "uid-p3")
	// p3's namespaced owner lives in another namespace: a Warning.
	if len(h.warnings) != 1 {
		t.Fatalf("warnings = %+v, want one for p3", h.warnings)
	}
	w := h.warnings[0]
	if w.obj != identityOf(p3) || w.reason != "OwnerRefInvalidNamespace" {
		t.Errorf("warning = %+v, want OwnerRefInvalidNamespace on %s", w, identityOf(p3))
	}
}

func TestGraphBuilderDependentInOtherNamespaceThanObservedOwnerWarns(t *testing.T) {
	h := newBuilderHarness(t)
	rs := replicaSet("a", "rs", "uid-rs")
	h.step(evAdd(rs))
	p := pod("b", "p", "uid-p", owned(ownerRefTo(rs)))
	h.step(evAdd(p))
	expectQueued(t, "attemptToDelete", h.gb.attemptToDelete, "uid-p")
	if len(h.warnings) != 1 || h.warnings[0].obj != identityOf(p) || h.warnings[0].reason != "OwnerRefInvalidNamespace" {
		t.Errorf("warnings = %+v, want one OwnerRefInvalidNamespace on %s", h.warnings, identityOf(p))
	}
	// A cluster-scoped owner may own objects of any namespace.
	h2 := newBuilderHarness(t)
	ns := testObject("v1", "Namespace", "", "team", "uid-ns")
	h2.step(evAdd(ns))
	h2.step(evAdd(pod("b", "p", "uid-p", owned(ownerRefTo(ns)))))
	expectQueued(t, "attemptToDelete for a cluster-scoped owner", h2.gb.attemptToDelete)
	if len(h2.warnings) != 0 {
		t.Errorf("warnings for a cluster-scoped owner = %+v, want none", h2.warnings)
	}
}

// Upstream's addDependentToOwners queues a dependent whose reference to a node already in
// the graph disagrees with that node's coordinates (the "good parent, then bad child"
// order; the opposite order is handled when the owner is observed), and one whose
// cluster-scoped virtual owner was named from another namespace (issue #98040): the
// collector verifies such references, and collects the dependent if they are dangling.
func TestGraphBuilderQueuesDependentWhoseReferenceMismatchesOwner(t *testing.T) {
	t.Run("observed owner", func(t *testing.T) {
		h := newBuilderHarness(t)
		rs := replicaSet("a", "rs-x", "uid-u")
		h.step(evAdd(rs))
		wrongName := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "not-rs-x", UID: "uid-u"}
		h.step(evAdd(pod("a", "bad", "uid-bad", owned(wrongName))))
		expectQueued(t, "attemptToDelete after a dependent naming uid-u with another name", h.gb.attemptToDelete, "uid-bad")
	})
	t.Run("virtual owner", func(t *testing.T) {
		h := newBuilderHarness(t)
		asRS := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-x", UID: "uid-u"}
		asDeploy := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "d-x", UID: "uid-u"}
		var queued []types.UID
		h.step(evAdd(pod("a", "good", "uid-good", owned(asRS))))
		queued = append(queued, uidsOf(drainQueue(h.gb.attemptToDelete))...)
		h.step(evAdd(pod("a", "bad", "uid-bad", owned(asDeploy))))
		queued = append(queued, uidsOf(drainQueue(h.gb.attemptToDelete))...)
		// The owner turns out to be the ReplicaSet the node was named after: observing it
		// changes no identity, so only the add above could have queued the bad dependent.
		h.step(evAdd(replicaSet("a", "rs-x", "uid-u")))
		queued = append(queued, uidsOf(drainQueue(h.gb.attemptToDelete))...)
		if !slices.Contains(queued, "uid-bad") {
			t.Errorf("the dependent naming uid-u as Deployment d-x (it is ReplicaSet rs-x) was never queued for verification; queued %v", queued)
		}
	})
	t.Run("cluster-scoped virtual owner named from another namespace", func(t *testing.T) {
		h := newBuilderHarness(t)
		cmRef := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "uid-cm"}
		// A cluster-scoped object names a ConfigMap: the virtual owner has no namespace.
		h.step(evAdd(testObject("v1", "PersistentVolume", "", "pv", "uid-pv", owned(cmRef))))
		expectQueued(t, "attemptToDelete after the cluster-scoped dependent", h.gb.attemptToDelete, "uid-cm")
		h.step(evAdd(pod("a", "p", "uid-p", owned(cmRef))))
		expectQueued(t, "attemptToDelete after the namespaced dependent", h.gb.attemptToDelete, "uid-p")
	})
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

func TestAlternateOwnerIdentityCyclesThroughAllIdentities(t *testing.T) {
	mk := func(name, ns string, refs ...metav1.OwnerReference) *node {
		return &node{identity: refIdentity("v1", "Pod", ns, name, types.UID("uid-"+name)), owners: refs}
	}
	ref := func(kind, name string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: "uid-u"}
	}
	deps := []*node{
		mk("p1", "a", ref("ReplicaSet", "x")),
		mk("p2", "a", ref("Deployment", "y")),
		mk("p3", "a", ref("StatefulSet", "z")),
	}
	start := refIdentity("apps/v1", "ReplicaSet", "a", "x", "uid-u")
	seen := map[objectReference]bool{start: true}
	cur := start
	for i := range 3 {
		alt := alternateOwnerIdentity(deps, cur)
		if alt == nil {
			t.Fatalf("step %d: no alternate for %s", i, cur)
		}
		if i < 2 && seen[*alt] {
			t.Fatalf("step %d: alternate %s repeats before every identity had a turn", i, alt)
		}
		seen[*alt] = true
		cur = *alt
	}
	if len(seen) != 3 {
		t.Errorf("identities tried = %d, want all 3", len(seen))
	}
	if alternateOwnerIdentity(deps[:1], start) != nil {
		t.Error("an alternate was found where every dependent names the absent identity")
	}
	// A cluster-scoped absent identity: the namespace of namespaced dependents naming the
	// same kind does not make another identity.
	cs := refIdentity("apps/v1", "ReplicaSet", "", "x", "uid-u")
	if alt := alternateOwnerIdentity(deps[:1], cs); alt != nil {
		t.Errorf("alternate for a cluster-scoped absent identity = %s, want none", alt)
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
