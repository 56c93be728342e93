package gc

// The step harness, in the manner of upstream's garbagecollector_test.go (TestConflictingData):
// a scenario is a list of steps over an engine built on the fakes (engineHarness), its
// three queues tracked so that what each holds, in order, can be asserted; informer events
// are fed by hand, workers are run one item at a time, and the graph's invariants are
// checked after every step. Nothing runs in the background: a requeue with backoff is held
// until the scenario lets it elapse (backoffElapses).

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
)

// --- the tracking queue ---

// trackingQueue stands in for a workQueue's client-go queue: it passes every call on, and
// keeps the items waiting in the order a worker will take them, as client-go's queue does
// (an item added while a worker has it goes back in, at the end, when the worker is done).
type trackingQueue[T comparable] struct {
	inner      workqueue.TypedInterface[T]
	pending    []T
	dirty      map[T]bool // waiting, or added again while in flight
	processing map[T]bool
}

func (q *trackingQueue[T]) Add(item T) {
	q.inner.Add(item)
	if q.dirty[item] {
		return
	}
	q.dirty[item] = true
	if !q.processing[item] {
		q.pending = append(q.pending, item)
	}
}

func (q *trackingQueue[T]) Get() (T, bool) {
	item, shutdown := q.inner.Get()
	if !shutdown {
		if i := slices.Index(q.pending, item); i >= 0 {
			q.pending = slices.Delete(q.pending, i, i+1)
		}
		delete(q.dirty, item)
		q.processing[item] = true
	}
	return item, shutdown
}

func (q *trackingQueue[T]) Done(item T) {
	q.inner.Done(item)
	delete(q.processing, item)
	if q.dirty[item] {
		q.pending = append(q.pending, item)
	}
}

func (q *trackingQueue[T]) Len() int           { return q.inner.Len() }
func (q *trackingQueue[T]) ShutDown()          { q.inner.ShutDown() }
func (q *trackingQueue[T]) ShutDownWithDrain() { q.inner.ShutDownWithDrain() }
func (q *trackingQueue[T]) ShuttingDown() bool { return q.inner.ShuttingDown() }
func (q *trackingQueue[T]) waiting() []T       { return slices.Clone(q.pending) }
func (q *trackingQueue[T]) consistent() error {
	if len(q.pending) != q.inner.Len() {
		return fmt.Errorf("the tracker holds %d items, the queue %d", len(q.pending), q.inner.Len())
	}
	return nil
}

// heldBackoff stands in for a workQueue's rate limiter: it counts retries as the real one
// does, but holds every requeued item until the scenario lets its backoff elapse.
type heldBackoff[T comparable] struct {
	workqueue.TypedRateLimiter[T]
	held []T
}

func (b *heldBackoff[T]) When(item T) time.Duration {
	b.TypedRateLimiter.When(item) // counts the retry
	if !slices.Contains(b.held, item) {
		b.held = append(b.held, item)
	}
	return 24 * time.Hour // the queue's own timer never fires within a test
}

// tracked is one work queue of the engine with its tracker and held backoffs.
type tracked[T comparable] struct {
	q       *workQueue[T]
	tracker *trackingQueue[T]
	backoff *heldBackoff[T]
}

func track[T comparable](q *workQueue[T]) tracked[T] {
	tq := &trackingQueue[T]{inner: q.queue, dirty: map[T]bool{}, processing: map[T]bool{}}
	b := &heldBackoff[T]{TypedRateLimiter: q.limiter}
	q.queue, q.limiter = tq, b
	return tracked[T]{q: q, tracker: tq, backoff: b}
}

// --- the scenario's context and steps ---

// stepContext is one scenario's engine and what the steps have seen of it.
type stepContext struct {
	*engineHarness
	attemptToDelete, attemptToOrphan tracked[*node]
	graphChanges                     tracked[*event]
	// observed: what the informers last said of each object (nil: deleted).
	observed map[types.UID]*metav1.PartialObjectMetadata
	// seq is the feed's position at the last expect step.
	seq uint64
}

func newStepContext(t *testing.T) *stepContext {
	h := newEngineHarness(t, Options{Now: fixedClock(testDeletionTime.Time)})
	return &stepContext{
		engineHarness:   h,
		attemptToDelete: track(h.gc.attemptToDelete),
		attemptToOrphan: track(h.gc.attemptToOrphan),
		graphChanges:    track(h.gc.builder.graphChanges),
		observed:        map[types.UID]*metav1.PartialObjectMetadata{},
	}
}

type step struct {
	name string
	do   func(*stepContext)
}

// store puts objects in the fake apiserver, or replaces them there.
func store(objs ...*metav1.PartialObjectMetadata) step {
	return step{"store", func(c *stepContext) {
		for _, o := range objs {
			gvr := gvrOf(o.APIVersion, o.Kind)
			if err := c.meta.Tracker().Update(gvr, o.DeepCopy(), o.Namespace); err != nil {
				c.storeAs(gvr, o)
			}
		}
	}}
}

// apiserverRemoves takes objects out of the fake apiserver: deleted by someone else.
func apiserverRemoves(objs ...*metav1.PartialObjectMetadata) step {
	return step{"apiserverRemoves", func(c *stepContext) {
		for _, o := range objs {
			if err := c.meta.Tracker().Delete(gvrOf(o.APIVersion, o.Kind), o.Namespace, o.Name); err != nil {
				c.t.Fatalf("removing %s %s: %v", o.Kind, o.Name, err)
			}
		}
	}}
}

// informerSees feeds informer events through graphChanges, one at a time, as a monitor does;
// the invariants are checked after each.
func informerSees(evs ...*event) step {
	return step{"informerSees", func(c *stepContext) {
		for _, ev := range evs {
			if c.graphChanges.q.Len() != 0 {
				c.t.Fatalf("informerSees: graphChanges holds %d events; process them first", c.graphChanges.q.Len())
			}
			c.graphChanges.q.Add(ev)
			c.gc.builder.processGraphChangesItem()
			if ev.eventType == deleteEvent {
				c.observed[ev.obj.UID] = nil
			} else {
				c.observed[ev.obj.UID] = ev.obj
			}
			c.checkInvariants()
		}
	}}
}

// processGraphChanges runs the graph builder on the n events queued (the workers' virtual
// deletes).
func processGraphChanges(n int) step {
	return step{"processGraphChanges", func(c *stepContext) {
		for i := range n {
			if c.graphChanges.q.Len() == 0 {
				c.t.Fatalf("processGraphChanges: %d events wanted, %d queued", n, i)
			}
			c.gc.builder.processGraphChangesItem()
		}
	}}
}

// processAttemptToDelete runs an attemptToDelete worker on the next n items.
func processAttemptToDelete(n int) step {
	return step{"processAttemptToDelete", func(c *stepContext) {
		for i := range n {
			if c.attemptToDelete.q.Len() == 0 {
				c.t.Fatalf("processAttemptToDelete: %d items wanted, %d queued", n, i)
			}
			c.gc.processAttemptToDeleteWorker(c.ctx)
		}
	}}
}

// processAttemptToOrphan runs an attemptToOrphan worker on the next n items.
func processAttemptToOrphan(n int) step {
	return step{"processAttemptToOrphan", func(c *stepContext) {
		for i := range n {
			if c.attemptToOrphan.q.Len() == 0 {
				c.t.Fatalf("processAttemptToOrphan: %d items wanted, %d queued", n, i)
			}
			c.gc.processAttemptToOrphanWorker(c.ctx)
		}
	}}
}

// backoffElapses puts the items requeued with backoff back in their queue, as the
// queue's timer would.
func backoffElapses() step {
	return step{"backoffElapses", func(c *stepContext) {
		for _, tq := range []tracked[*node]{c.attemptToDelete, c.attemptToOrphan} {
			held := tq.backoff.held
			tq.backoff.held = nil
			for _, n := range held {
				tq.q.Add(n)
			}
		}
	}}
}

// apiserverAnswers prepends a reactor to the fake apiserver: an answer a real one would
// give that the fake does not.
func apiserverAnswers(verb, resource string, react clienttesting.ReactionFunc) step {
	return step{"apiserverAnswers " + verb + " " + resource, func(c *stepContext) {
		c.meta.PrependReactor(verb, resource, react)
	}}
}

// apiserverDeletes makes the fake delete as a real apiserver does: an object with
// finalizers, or deleted with the Foreground or Orphan policy, gets a deletionTimestamp
// (and the policy's finalizer) and stays.
func apiserverDeletes(resource string) step {
	return step{"apiserverDeletes " + resource, func(c *stepContext) {
		c.meta.PrependReactor("delete", resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
			da := a.(clienttesting.DeleteAction)
			obj, err := c.meta.Tracker().Get(da.GetResource(), da.GetNamespace(), da.GetName())
			if err != nil {
				return true, nil, err
			}
			stored := obj.(*metav1.PartialObjectMetadata)
			finalizers := slices.Clone(stored.Finalizers)
			for policy, f := range map[metav1.DeletionPropagation]string{
				metav1.DeletePropagationForeground: metav1.FinalizerDeleteDependents,
				metav1.DeletePropagationOrphan:     metav1.FinalizerOrphanDependents,
			} {
				if p := da.GetDeleteOptions().PropagationPolicy; p != nil && *p == policy && !slices.Contains(finalizers, f) {
					finalizers = append(finalizers, f)
				}
			}
			if len(finalizers) == 0 {
				return false, nil, nil // gone at once: the fake's own delete
			}
			deleting := changed(stored, finalized(finalizers...), withDeletionTimestamp)
			return true, nil, c.meta.Tracker().Update(da.GetResource(), deleting, da.GetNamespace())
		})
	}}
}

func withDeletionTimestamp(o *metav1.PartialObjectMetadata) {
	if o.DeletionTimestamp == nil {
		deleting()(o)
	}
}

// --- the expected state ---

// state is what a scenario expects after a step. Every field is checked: empty means none.
type state struct {
	graph           []*node // every node of the graph: identity, virtual, owners, deletion marks
	attemptToDelete []*node // waiting, in order: identity and virtual
	attemptToOrphan []*node
	backoff         []*node  // attemptToDelete items requeued with backoff, not back yet
	graphChanges    []string // waiting events, in order: "virtualDelete v1/ConfigMap a/name"
	absent          []objectReference
	// writes are the requests that change the apiserver since the previous expect, in
	// order; reads the GETs, checked only when not nil.
	writes, reads []string
	warnings      []string // Warning events since the previous expect: "Kind ns/name: Reason: message"
}

// observed is the node an informer's observation of obj makes.
func observedNode(obj *metav1.PartialObjectMetadata) *node {
	n := &node{identity: identityOf(obj), owners: obj.OwnerReferences, beingDeleted: obj.DeletionTimestamp != nil}
	n.deletingDependents = n.beingDeleted && slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents)
	return n
}

// virtualNode is the node a dependent's reference makes for an owner not observed.
func virtualNode(id objectReference) *node { return &node{identity: id, virtual: true} }

func expect(want state) step {
	return step{"expect", func(c *stepContext) {
		t := c.t
		t.Helper()
		c.gc.graph.mu.RLock()
		var got []string
		for _, n := range c.gc.graph.uidToNode {
			got = append(got, describeGraphNode(n))
		}
		c.gc.graph.mu.RUnlock()
		var wantGraph []string
		for _, n := range want.graph {
			wantGraph = append(wantGraph, describeGraphNode(n))
		}
		expectStrings(t, "graph", got, wantGraph, true)
		expectStrings(t, "attemptToDelete", describeQueued(c.attemptToDelete.tracker.waiting()), describeQueued(want.attemptToDelete), false)
		expectStrings(t, "attemptToOrphan", describeQueued(c.attemptToOrphan.tracker.waiting()), describeQueued(want.attemptToOrphan), false)
		expectStrings(t, "backoff", describeQueued(c.attemptToDelete.backoff.held), describeQueued(want.backoff), false)
		var changes []string
		for _, ev := range c.graphChanges.tracker.waiting() {
			ref, change := ev.describe()
			changes = append(changes, fmt.Sprintf("%s %s/%s %s/%s", change, ref.APIVersion, ref.Kind, ref.Namespace, ref.Name))
		}
		expectStrings(t, "graphChanges", changes, want.graphChanges, false)

		for _, ref := range want.absent {
			if !c.gc.absentOwners.Has(ref) {
				t.Errorf("absent-owner cache lacks %s", ref)
			}
		}
		if got := c.gc.absentOwners.Len(); got != len(want.absent) {
			t.Errorf("absent-owner cache holds %d references, want %d: %v", got, len(want.absent), want.absent)
		}

		var writes, reads []string
		for _, a := range c.meta.Actions() {
			switch a.GetVerb() {
			case "get":
				reads = append(reads, describeRequest(t, a))
			case "list", "watch":
			default:
				writes = append(writes, describeRequest(t, a))
			}
		}
		c.meta.ClearActions()
		expectStrings(t, "writes", writes, want.writes, false)
		if want.reads != nil {
			expectStrings(t, "reads", reads, want.reads, false)
		}

		var warnings []string
		for _, a := range c.feedActions(c.seq) {
			if a.Verb == VerbWarn {
				warnings = append(warnings, fmt.Sprintf("%s %s/%s: %s", a.Object.Kind, a.Object.Namespace, a.Object.Name, a.Reason))
			}
		}
		c.seq = c.gc.feed.LastSeq()
		expectStrings(t, "warnings", warnings, want.warnings, false)
	}}
}

func expectStrings(t *testing.T, what string, got, want []string, anyOrder bool) {
	t.Helper()
	if anyOrder {
		got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %s\n want %s", what, strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

// describeGraphNode is a node as a scenario states it: identity, virtual, deletion marks, owners.
func describeGraphNode(n *node) string {
	s := fmt.Sprintf("%s/%s %s/%s", n.identity.APIVersion, n.identity.Kind, n.identity.Namespace, n.identity.Name)
	if n.virtual {
		s += " (virtual)"
	}
	if n.deletingDependents {
		s += " (deleting dependents)"
	} else if n.beingDeleted {
		s += " (being deleted)"
	}
	var owners []string
	for _, r := range n.owners {
		o := r.Kind + " " + r.Name
		if isBlocking(r) {
			o += " (blocking)"
		}
		owners = append(owners, o)
	}
	if len(owners) > 0 {
		s += " owned by " + strings.Join(owners, ", ")
	}
	return s + " uid " + string(n.identity.UID)
}

func describeQueued(ns []*node) []string {
	var out []string
	for _, n := range ns {
		s := fmt.Sprintf("%s/%s %s/%s", n.identity.APIVersion, n.identity.Kind, n.identity.Namespace, n.identity.Name)
		if n.virtual {
			s += " (virtual)"
		}
		out = append(out, s)
	}
	return out
}

// describeRequest is one request to the fake apiserver: "get configmaps a/x",
// "delete configmaps a/x Background", "patch configmaps a/x finalizers []",
// "patch pods a/p remove owner uid-o". A delete without the object's uid as precondition
// fails the test: every delete carries one.
func describeRequest(t *testing.T, a clienttesting.Action) string {
	t.Helper()
	s := a.GetVerb() + " " + a.GetResource().Resource + " " + a.GetNamespace() + "/"
	switch a := a.(type) {
	case clienttesting.DeleteAction:
		s += a.GetName()
		opts := a.GetDeleteOptions()
		if opts.Preconditions == nil || opts.Preconditions.UID == nil {
			t.Errorf("%s: no uid precondition", s)
		}
		if opts.PropagationPolicy != nil {
			s += " " + string(*opts.PropagationPolicy)
		}
	case clienttesting.PatchAction:
		s += a.GetName() + " " + describePatch(t, a.GetPatch())
	case clienttesting.GetAction:
		s += a.GetName()
	}
	return s
}

func describePatch(t *testing.T, body []byte) string {
	var p struct {
		Metadata struct {
			OwnerReferences []map[string]any `json:"ownerReferences"`
			Finalizers      *[]string        `json:"finalizers"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Errorf("patch %s: %v", body, err)
	}
	var parts []string
	for _, r := range p.Metadata.OwnerReferences {
		switch {
		case r["$patch"] == "delete":
			parts = append(parts, fmt.Sprintf("remove owner %v", r["uid"]))
		case r["blockOwnerDeletion"] == false:
			parts = append(parts, fmt.Sprintf("unblock owner %v", r["uid"]))
		default:
			parts = append(parts, fmt.Sprintf("owner %v", r))
		}
	}
	if f := p.Metadata.Finalizers; f != nil {
		parts = append(parts, fmt.Sprintf("finalizers %v", *f))
	}
	if len(parts) == 0 {
		return string(body)
	}
	return strings.Join(parts, ", ")
}

// --- the invariants ---

// checkInvariants holds after every step: the graph is consistent (verifyGraphInvariants:
// owners and dependents agree, virtual nodes have no owners and are counted); every object
// the informers last saw present is an observed node with the owners it was seen with, and
// no object they saw deleted is an observed node (a virtual one may come back for it, made
// by a later dependent's reference); the feed's node events rebuild the graph exactly; and
// each tracked queue agrees with the queue it stands in for.
//
// A queued node need not be in the graph: an item queued before its object's delete was
// seen stays queued, and the worker drops it (upstream's GETs it, gets a 404 and queues a
// virtual delete that finds no node). So that is no invariant, here or upstream.
func (c *stepContext) checkInvariants() {
	t := c.t
	t.Helper()
	verifyGraphInvariants(t, c.gc.graph)

	c.gc.graph.mu.RLock()
	for uid, obj := range c.observed {
		n, ok := c.gc.graph.read(uid)
		switch {
		case obj == nil && ok && !n.virtual:
			t.Errorf("invariant: %s was seen deleted but is an observed node of the graph", n.identity)
		case obj == nil:
		case !ok || n.virtual:
			t.Errorf("invariant: %s %s/%s was seen present but is not an observed node of the graph", obj.Kind, obj.Namespace, obj.Name)
		case n.identity != identityOf(obj) || !reflect.DeepEqual(n.owners, obj.OwnerReferences):
			t.Errorf("invariant: node %s owned by %v, but the informer saw %s owned by %v", n.identity, n.owners, identityOf(obj), obj.OwnerReferences)
		}
	}
	c.gc.graph.mu.RUnlock()

	evs, err := c.gc.feed.Since(0, 0)
	if err != nil {
		t.Fatalf("feed: %v", err)
	}
	mirror := map[types.UID]NodeState{}
	applyNodeEvents(mirror, evs)
	c.gc.graph.mu.RLock()
	for uid, n := range c.gc.graph.uidToNode {
		if got, ok := mirror[uid]; !ok || !reflect.DeepEqual(got, *stateOf(n)) {
			t.Errorf("invariant: the feed tells node %s as %+v, the graph has %+v", n.identity, got, *stateOf(n))
		}
	}
	for uid := range mirror {
		if _, ok := c.gc.graph.uidToNode[uid]; !ok {
			t.Errorf("invariant: the feed tells of node %s, which is not in the graph", uid)
		}
	}
	c.gc.graph.mu.RUnlock()

	for name, err := range map[string]error{
		"attemptToDelete": c.attemptToDelete.tracker.consistent(),
		"attemptToOrphan": c.attemptToOrphan.tracker.consistent(),
		"graphChanges":    c.graphChanges.tracker.consistent(),
	} {
		if err != nil {
			t.Errorf("invariant: %s: %v", name, err)
		}
	}
}

// runSteps runs a scenario: each step, then the invariants.
func runSteps(t *testing.T, steps []step) {
	t.Helper()
	c := newStepContext(t)
	for i, s := range steps {
		t.Logf("step %d: %s", i, s.name)
		s.do(c)
		c.checkInvariants()
		if t.Failed() {
			t.Fatalf("failed at step %d (%s)", i, s.name)
		}
	}
}
