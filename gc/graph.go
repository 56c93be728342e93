package gc

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// objectReference is an object's identity: the coordinates of an ownerReference plus the
// namespace, which an ownerReference leaves implicit (the dependent's own).
type objectReference struct {
	metav1.OwnerReference // only APIVersion, Kind, Name and UID are set
	Namespace             string
}

func (r objectReference) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
}

// ownerCoordinates strips an ownerReference down to what identifies the owner; the
// controller and blockOwnerDeletion flags describe the edge, not the owner.
func ownerCoordinates(ref metav1.OwnerReference) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
}

// node is one object of the dependency graph, observed through an informer or, when
// virtual, only known because a dependent names it as an owner.
//
// Concurrency: the GraphBuilder's processGraphChanges goroutine is the only writer of every
// field, always holding graph.mu for writing. Workers and readers (Snapshot, Explain) hold
// graph.mu for reading. identity never changes once a node is in the graph: a node whose
// identity must change is replaced by a clone.
type node struct {
	identity objectReference
	// dependents are the nodes that list this node among their owners (nil until the
	// first).
	dependents map[*node]struct{}
	// owners are the node's ownerReferences as last observed; nil for virtual nodes.
	owners []metav1.OwnerReference

	// beingDeleted: the object has a deletionTimestamp.
	beingDeleted bool
	// deletingDependents: being deleted with the foregroundDeletion finalizer, so it waits
	// for its blocking dependents to go before the collector lets it go.
	deletingDependents bool
	// virtual: not observed through an informer yet, only named by dependents.
	virtual bool
	// countedAs, countedAt and counted: how the node is counted in the graph's summary,
	// and where among its group's members (summary.go).
	countedAs uint8
	countedAt int32
	counted   *countGroup

	// What the last observation said, kept so Explain and the feed can tell why an
	// object stays.
	finalizers        []string
	deletionTimestamp *time.Time
	// resourceVersion of the last observation: a decision made from the graph's view is
	// sent with it as a precondition, so a stale view earns a 409, never a wrong write.
	resourceVersion string

	// orphaned: the references the collector removed from the object, newest last
	// (orphan_marks.go). The one field workers write too, holding graph.mu for writing.
	orphaned []OrphanMark
}

func (n *node) clone() *node {
	c := *n
	c.dependents = make(map[*node]struct{}, len(n.dependents))
	for d := range n.dependents {
		c.dependents[d] = struct{}{}
	}
	c.owners = slices.Clone(n.owners)
	c.finalizers = slices.Clone(n.finalizers)
	c.orphaned = slices.Clone(n.orphaned)
	return &c
}

// blockingDependents are the dependents whose reference to n sets blockOwnerDeletion:
// while any exists, a foreground deletion of n waits.
func (n *node) blockingDependents() []*node {
	var out []*node
	for dep := range n.dependents {
		for _, ref := range dep.owners {
			if ref.UID == n.identity.UID && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				out = append(out, dep)
				break
			}
		}
	}
	sortNodes(out)
	return out
}

func (n *node) dependentList() []*node {
	out := make([]*node, 0, len(n.dependents))
	for d := range n.dependents {
		out = append(out, d)
	}
	sortNodes(out)
	return out
}

// sortNodes orders nodes by uid, so that everything derived from a set of nodes
// (queue order, explanations, snapshots) is deterministic.
func sortNodes(ns []*node) {
	slices.SortFunc(ns, func(a, b *node) int { return cmp.Compare(a.identity.UID, b.identity.UID) })
}

// graph is the dependency graph: every node by uid. See node for who may touch what.
type graph struct {
	mu        sync.RWMutex
	uidToNode map[types.UID]*node
	virtuals  int // number of virtual nodes, kept for the metric
	// counts are the nodes counted per namespace and kind, kept as they change (Summary).
	counts summaryCounts
	// marked are the uids of the nodes that carry orphan marks (some may have left the
	// graph since), so that expiring them walks these only.
	marked map[types.UID]struct{}
}

func newGraph() *graph {
	return &graph{uidToNode: map[types.UID]*node{}, marked: map[types.UID]struct{}{}, counts: summaryCounts{groups: map[summaryKey]*countGroup{}, deleting: map[types.UID]*node{}}}
}

// The methods below require g.mu held for writing (the graph builder) or reading.

func (g *graph) read(uid types.UID) (*node, bool) {
	n, ok := g.uidToNode[uid]
	return n, ok
}

func (g *graph) write(n *node) {
	if old, ok := g.uidToNode[n.identity.UID]; ok && old.virtual {
		g.virtuals--
	}
	g.uidToNode[n.identity.UID] = n
	if n.virtual {
		g.virtuals++
	}
}

func (g *graph) delete(uid types.UID) {
	if old, ok := g.uidToNode[uid]; ok {
		if old.virtual {
			g.virtuals--
		}
		delete(g.uidToNode, uid)
	}
}

// markObserved turns a virtual node into an observed one.
func (g *graph) markObserved(n *node) {
	if n.virtual {
		n.virtual = false
		g.virtuals--
	}
}
