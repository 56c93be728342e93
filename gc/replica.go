package gc

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// Replica is the engine's state rebuilt from its feed, outside the engine: seeded with a
// Snapshot at seq S and given the events after S in order, its Snapshot equals the
// engine's at any later seq. Node events carry a node's whole state; queue transitions,
// actions and sync changes follow applyFeedEvent, the same rule the feed keeps its own
// queue mirrors with, so the two cannot drift apart.
//
// It holds maps, not a Snapshot's sorted slices: a replay applies tens of thousands of
// events to a graph of thousands of nodes. Not safe for concurrent use.
type Replica struct {
	seq    uint64
	mode   Mode
	nodes  map[types.UID]NodeState
	queues map[QueueName]*queueMirror
	sync   SyncState
}

// queueOrder is the order a snapshot lists the queues in.
var queueOrder = []QueueName{GraphChanges, AttemptToDelete, AttemptToOrphan}

// NewReplica starts a replica from s (which it does not keep).
func NewReplica(s *Snapshot) *Replica {
	r := &Replica{seq: s.Seq, mode: s.Mode, nodes: make(map[types.UID]NodeState, len(s.Nodes)), sync: s.Sync,
		queues: map[QueueName]*queueMirror{}}
	for _, n := range s.Nodes {
		r.nodes[n.UID] = n
	}
	for _, name := range queueOrder {
		m := newQueueMirror(name)
		if i := slices.IndexFunc(s.Queues, func(q QueueState) bool { return q.Name == name }); i >= 0 {
			m.seed(&s.Queues[i])
		}
		r.queues[name] = m
	}
	return r
}

// ErrUnknownEventType is what Apply says of an event whose type is not one of EventTypes.
var ErrUnknownEventType = errors.New("gc feed: unknown event type")

// Apply applies e, the event after the replica's seq, as the engine did when it published
// it. An event without a payload only advances the seq. Every type of EventTypes has its
// case; any other type only advances the seq too, and Apply says so with
// ErrUnknownEventType.
func (r *Replica) Apply(e *Event) error {
	r.seq = e.Seq
	switch e.Type {
	case NodeAdded, NodeUpdated:
		if e.Node != nil {
			r.nodes[e.Node.UID] = *e.Node
		}
	case NodeRemoved:
		if e.Node != nil {
			delete(r.nodes, e.Node.UID)
		}
	case EdgeAdded, EdgeRemoved:
		// Nothing: the edges are in the nodes' owners, which node events carry.
	case QueueChange, ActionTaken, SyncChange:
		applyFeedEvent(r.queues, &r.sync, e)
	case ShadowChange:
		// Nothing: a Snapshot holds no shadow decisions (the engine's ShadowReport does).
	default:
		return fmt.Errorf("%w %q (event %d)", ErrUnknownEventType, e.Type, e.Seq)
	}
	return nil
}

// applyFeedEvent is the feed's rule for its queues and sync state, by payload: a queue
// transition moves an item, an action joins its queue's recent actions, a sync event
// replaces the sync state.
func applyFeedEvent(queues map[QueueName]*queueMirror, sync *SyncState, e *Event) {
	switch {
	case e.Queue != nil && queues[e.Queue.Queue] != nil:
		queues[e.Queue.Queue].apply(e.Queue, e.Time)
	case e.Action != nil && queues[e.Action.Queue] != nil:
		queues[e.Action.Queue].record(*e.Action)
	case e.Sync != nil:
		*sync = *e.Sync
	}
}

// Seq is the seq of the last event applied (or of the seed snapshot).
func (r *Replica) Seq() uint64 { return r.seq }

// Mode is the engine's mode.
func (r *Replica) Mode() Mode { return r.mode }

// Len is how many nodes the graph holds.
func (r *Replica) Len() int { return len(r.nodes) }

// Node is the node of uid, if the graph holds it.
func (r *Replica) Node(uid types.UID) (NodeState, bool) {
	n, ok := r.nodes[uid]
	return n, ok
}

// QueueItem is where uid stands in queue q, if it is there; counts are q's.
func (r *Replica) QueueItem(q QueueName, uid types.UID) (it QueueItem, counts QueueCounts, ok bool) {
	m := r.queues[q]
	if m == nil {
		return it, counts, false
	}
	counts = QueueCounts{Depth: m.queued, InFlight: m.inFlight}
	if p := m.items[uid]; p != nil {
		return *p, counts, true
	}
	return it, counts, false
}

// Snapshot is the state in gc.Snapshot's form: nodes sorted by uid, queues in the
// engine's order with their items sorted by uid and their actions oldest first.
func (r *Replica) Snapshot() Snapshot {
	s := Snapshot{Seq: r.seq, Mode: r.mode, Sync: r.sync, Nodes: make([]NodeState, 0, len(r.nodes))}
	for _, n := range r.nodes {
		s.Nodes = append(s.Nodes, n)
	}
	slices.SortFunc(s.Nodes, func(a, b NodeState) int { return cmp.Compare(a.UID, b.UID) })
	for _, name := range queueOrder {
		s.Queues = append(s.Queues, r.queues[name].state())
	}
	return s
}

// seed sets the mirror to a snapshot's state of its queue.
func (m *queueMirror) seed(s *QueueState) {
	m.queued, m.inFlight, m.adds, m.retries = s.Depth, s.InFlight, s.Adds, s.Retries
	for i := range s.Items {
		it := s.Items[i]
		m.items[it.Object.UID] = &it
	}
	m.recent = slices.Clone(s.Recent) // oldest first: a full ring starts at 0
	if len(m.recent) > recentActions {
		m.recent = m.recent[len(m.recent)-recentActions:]
	}
	m.next = 0
}
