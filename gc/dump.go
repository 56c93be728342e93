package gc

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// Snapshot is the engine's whole state at one sequence number: applying the feed's events
// after Seq, in order, to it gives the state at any later sequence number.
type Snapshot struct {
	Seq    uint64       `json:"seq"`
	Mode   Mode         `json:"mode"`
	Nodes  []NodeState  `json:"nodes"` // sorted by uid; edges are the nodes' Owners
	Queues []QueueState `json:"queues"`
	Sync   SyncState    `json:"sync"`
}

// Snapshot copies the graph and the queues, consistent with the feed's sequence number:
// graph events are published under the graph lock it holds.
func (gc *GarbageCollector) Snapshot() Snapshot {
	gc.graph.mu.RLock()
	s := gc.SnapshotWithoutNodes()
	s.Nodes = make([]NodeState, 0, len(gc.graph.uidToNode))
	for _, n := range gc.graph.uidToNode {
		s.Nodes = append(s.Nodes, *stateOf(n))
	}
	gc.graph.mu.RUnlock()
	slices.SortFunc(s.Nodes, func(a, b NodeState) int { return cmp.Compare(a.UID, b.UID) })
	return s
}

// SnapshotWithoutNodes is Snapshot for a reader that holds no object (a summary-first
// stream naming nothing): the queues and the sync state at the feed's sequence number,
// without a copy of the graph.
func (gc *GarbageCollector) SnapshotWithoutNodes() Snapshot {
	gc.feed.mu.Lock()
	defer gc.feed.mu.Unlock()
	s := Snapshot{Seq: gc.feed.seq, Mode: gc.opts.Mode, Sync: gc.feed.sync, Nodes: []NodeState{}}
	for _, q := range []QueueName{GraphChanges, AttemptToDelete, AttemptToOrphan} {
		s.Queues = append(s.Queues, gc.feed.queues[q].state())
	}
	return s
}

// NodeDetail is one node with its dependents.
type NodeDetail struct {
	NodeState
	Dependents []ObjectRef `json:"dependents,omitempty"`
}

// Node returns the node of uid, if the graph has it.
func (gc *GarbageCollector) Node(uid types.UID) (NodeDetail, bool) {
	gc.graph.mu.RLock()
	defer gc.graph.mu.RUnlock()
	n, ok := gc.graph.read(uid)
	if !ok {
		return NodeDetail{}, false
	}
	d := NodeDetail{NodeState: *stateOf(n)}
	for _, dep := range n.dependentList() {
		d.Dependents = append(d.Dependents, refOf(dep.identity))
	}
	return d, true
}
