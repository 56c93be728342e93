package history

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// replica is the engine's state rebuilt from its feed: what gc.Snapshot returns, kept up
// to date by applying each event in order, as docs/stream.md promises a client can. The
// node events carry a node's whole state; the queues follow gc's own mirror of them
// (gc/feed.go, queueMirror), transition by transition, so that a replica seeded with a
// snapshot at seq S and given the events after S equals the snapshot at any later seq.
//
// The Recorder keeps one to write checkpoints without asking the engine again; StateAt
// builds one from a checkpoint and replays the events after it.
//
// Not safe for concurrent use.
type replica struct {
	seq    uint64
	mode   gc.Mode
	nodes  map[types.UID]gc.NodeState
	queues []*queueReplica // in gc's order: graphChanges, attemptToDelete, attemptToOrphan
	sync   gc.SyncState
}

// queueNames are the engine's queues, in the order a snapshot lists them.
var queueNames = []gc.QueueName{gc.GraphChanges, gc.AttemptToDelete, gc.AttemptToOrphan}

// recentActions is how many actions per queue the feed keeps (gc/feed.go).
const recentActions = 64

func newReplica(s *gc.Snapshot) *replica {
	r := &replica{seq: s.Seq, mode: s.Mode, nodes: make(map[types.UID]gc.NodeState, len(s.Nodes)), sync: s.Sync}
	for _, n := range s.Nodes {
		r.nodes[n.UID] = n
	}
	for _, name := range queueNames {
		q := &queueReplica{name: name, items: map[types.UID]*gc.QueueItem{}}
		if i := slices.IndexFunc(s.Queues, func(qs gc.QueueState) bool { return qs.Name == name }); i >= 0 {
			q.seed(&s.Queues[i])
		}
		r.queues = append(r.queues, q)
	}
	return r
}

func (r *replica) queue(name gc.QueueName) *queueReplica {
	for _, q := range r.queues {
		if q.name == name {
			return q
		}
	}
	return nil
}

// apply applies one event, as the engine's graph and feed did when it was published.
func (r *replica) apply(e *gc.Event) {
	r.seq = e.Seq
	switch e.Type {
	case gc.NodeAdded, gc.NodeUpdated:
		if e.Node != nil {
			r.nodes[e.Node.UID] = *e.Node
		}
	case gc.NodeRemoved:
		if e.Node != nil {
			delete(r.nodes, e.Node.UID)
		}
	}
	// As the feed's publish does: by payload.
	switch {
	case e.Queue != nil && r.queue(e.Queue.Queue) != nil:
		r.queue(e.Queue.Queue).apply(e.Queue, e.Time)
	case e.Action != nil && r.queue(e.Action.Queue) != nil:
		r.queue(e.Action.Queue).record(*e.Action)
	case e.Sync != nil:
		r.sync = *e.Sync
	}
}

// snapshot is the replica's state in gc.Snapshot's form: nodes sorted by uid, queues in
// gc's order with their items sorted by uid and their actions oldest first.
func (r *replica) snapshot() gc.Snapshot {
	s := gc.Snapshot{Seq: r.seq, Mode: r.mode, Sync: r.sync, Nodes: make([]gc.NodeState, 0, len(r.nodes))}
	for _, n := range r.nodes {
		s.Nodes = append(s.Nodes, n)
	}
	slices.SortFunc(s.Nodes, func(a, b gc.NodeState) int { return cmp.Compare(a.UID, b.UID) })
	for _, q := range r.queues {
		s.Queues = append(s.Queues, q.state())
	}
	return s
}

// queueReplica is gc's queueMirror, followed from the outside.
type queueReplica struct {
	name     gc.QueueName
	items    map[types.UID]*gc.QueueItem
	queued   int
	inFlight int
	adds     uint64
	retries  uint64
	recent   []gc.Action // ring of the latest actions
	next     int
}

func (m *queueReplica) seed(s *gc.QueueState) {
	m.queued, m.inFlight, m.adds, m.retries = s.Depth, s.InFlight, s.Adds, s.Retries
	for i := range s.Items {
		it := s.Items[i]
		m.items[it.Object.UID] = &it
	}
	m.recent = slices.Clone(s.Recent) // oldest first: a full ring starts at 0
	if len(m.recent) > recentActions {
		m.recent = m.recent[len(m.recent)-recentActions:]
	}
}

// apply is gc's queueMirror.apply.
func (m *queueReplica) apply(e *gc.QueueEvent, now time.Time) {
	it := m.items[e.Object.UID]
	if it == nil {
		it = &gc.QueueItem{Object: e.Object, Since: now}
		m.items[e.Object.UID] = it
	}
	it.Object, it.Retries = e.Object, e.Retries
	if e.Change != "" {
		it.Change = e.Change
	}
	switch e.Op {
	case gc.QueueAdded:
		m.adds++
		if !e.Merged {
			if it.QueuedItems == 0 {
				it.Since = now
			}
			it.QueuedItems++
			m.queued++
		}
		it.BackoffUntil = nil
	case gc.QueueAddedAfter:
		m.retries++
		until := now.Add(e.Delay)
		it.BackoffUntil = &until
	case gc.QueueTaken:
		if it.QueuedItems > 0 {
			it.QueuedItems--
			m.queued--
		}
		it.InFlightItems++
		m.inFlight++
		it.Since = now
	case gc.QueueDone:
		if it.InFlightItems > 0 {
			it.InFlightItems--
			m.inFlight--
		}
	case gc.QueueForgotten:
		it.Retries = 0
	}
	it.Queued, it.InFlight = it.QueuedItems > 0, it.InFlightItems > 0
	if !it.Queued && !it.InFlight && it.BackoffUntil == nil && it.Retries == 0 {
		delete(m.items, e.Object.UID)
	}
}

func (m *queueReplica) record(a gc.Action) {
	if len(m.recent) < recentActions {
		m.recent = append(m.recent, a)
		return
	}
	m.recent[m.next] = a
	m.next = (m.next + 1) % recentActions
}

// state is gc's queueMirror.state.
func (m *queueReplica) state() gc.QueueState {
	s := gc.QueueState{Name: m.name, Depth: m.queued, InFlight: m.inFlight, Adds: m.adds, Retries: m.retries}
	s.Items = make([]gc.QueueItem, 0, len(m.items))
	for _, it := range m.items {
		c := *it
		if c.BackoffUntil != nil {
			s.Backoff++
		}
		s.Items = append(s.Items, c)
	}
	slices.SortFunc(s.Items, func(a, b gc.QueueItem) int { return cmp.Compare(a.Object.UID, b.Object.UID) })
	s.Recent = append(slices.Clone(m.recent[m.next:]), m.recent[:m.next]...)
	return s
}
