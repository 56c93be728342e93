package gc

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The graph builder's test harness: a builder fed events by hand, checks of the graph's
// invariants and of the mirror, and readers of what it queued.

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
