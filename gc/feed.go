package gc

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The feed is the engine's only door to the rest of gcscope: a sequence-numbered stream
// of every graph mutation, every queue transition and every worker action. Publishing
// never waits for a reader: events go into a bounded ring, and a reader that falls more
// than the ring behind gets ErrTooOld and must take a fresh Snapshot.

// ErrTooOld means the events asked for have left the ring: take a fresh Snapshot.
var ErrTooOld = errors.New("gc feed: events no longer held; take a new snapshot")

// DefaultFeedSize is how many events the feed holds for readers.
const DefaultFeedSize = 1 << 16

// recentActions is how many actions per queue the feed keeps for the queues view.
const recentActions = 64

// Feed is the engine's event stream. Safe for concurrent use.
type Feed struct {
	mu     sync.Mutex
	now    func() time.Time
	seq    uint64 // of the last event published
	ring   []Event
	start  int // index of the oldest held event
	count  int
	notify chan struct{} // closed at the next publish; nil when nobody waits

	queues map[QueueName]*queueMirror
	sync   SyncState
}

func newFeed(size int, now func() time.Time) *Feed {
	if size <= 0 {
		size = DefaultFeedSize
	}
	f := &Feed{now: now, ring: make([]Event, size), queues: map[QueueName]*queueMirror{}}
	for _, q := range queueOrder {
		f.queues[q] = newQueueMirror(q)
	}
	return f
}

// NewFeed returns an empty feed that holds size events (DefaultFeedSize if size <= 0).
// The engine makes its own; this is for other producers, such as test doubles of it.
func NewFeed(size int) *Feed { return newFeed(size, time.Now) }

// Size is how many events the feed holds for a reader that lags behind.
func (f *Feed) Size() int { return len(f.ring) }

// Publish appends events in order as one step (a reader sees all of them or none),
// assigning their sequence numbers and times, and returns the last sequence number. It
// never blocks on readers. Within gcscope only the engine publishes.
func (f *Feed) Publish(events ...Event) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range events {
		f.publishLocked(e)
	}
	return f.seq
}

// publish appends e, assigning its sequence number and time. It never blocks on readers.
func (f *Feed) publish(e Event) {
	f.mu.Lock()
	f.publishLocked(e)
	f.mu.Unlock()
}

func (f *Feed) publishLocked(e Event) {
	f.seq++
	e.Seq = f.seq
	e.Time = f.now()
	applyFeedEvent(f.queues, &f.sync, &e) // as a Replica does (replica.go)
	if f.count < len(f.ring) {
		f.ring[(f.start+f.count)%len(f.ring)] = e
		f.count++
	} else {
		f.ring[f.start] = e
		f.start = (f.start + 1) % len(f.ring)
	}
	if f.notify != nil {
		close(f.notify)
		f.notify = nil
	}
}

// LastSeq is the sequence number of the newest event (0 before the first).
func (f *Feed) LastSeq() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seq
}

// Since returns up to max events that follow seq, oldest first. ErrTooOld means some of
// them have already been overwritten.
func (f *Feed) Since(seq uint64, max int) ([]Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if seq >= f.seq {
		return nil, nil
	}
	oldest := f.seq - uint64(f.count) + 1
	if seq+1 < oldest {
		return nil, ErrTooOld
	}
	n := int(f.seq - seq)
	if max > 0 && n > max {
		n = max
	}
	out := make([]Event, n)
	first := int(seq + 1 - oldest)
	for i := range n {
		out[i] = f.ring[(f.start+first+i)%len(f.ring)]
	}
	return out, nil
}

// Wait blocks until an event after seq exists or ctx ends.
func (f *Feed) Wait(ctx context.Context, seq uint64) error {
	f.mu.Lock()
	if f.seq > seq {
		f.mu.Unlock()
		return nil
	}
	if f.notify == nil {
		f.notify = make(chan struct{})
	}
	ch := f.notify
	f.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queueMirror follows one work queue's items through the feed's own transitions, with
// the queue's semantics: queued items, items in flight, and items added while in flight
// ("dirty") that go back in when done. It counts items per object: graphChanges holds
// one item per observed change, several of one object at a time, and a node queue can
// hold two nodes of one uid (a virtual owner and its replacement).
type queueMirror struct {
	name     QueueName
	items    map[types.UID]*QueueItem
	queued   int
	inFlight int
	adds     uint64
	retries  uint64
	recent   []Action // ring of the latest actions
	next     int
}

// QueueItem is where one object stands in a queue.
type QueueItem struct {
	Object ObjectRef `json:"object"`
	Change string    `json:"change,omitempty"`
	// Queued: waiting for a worker. InFlight: a worker has it. Both: it was added again
	// while in flight and goes back in when the worker is done.
	Queued   bool `json:"queued,omitempty"`
	InFlight bool `json:"inFlight,omitempty"`
	// QueuedItems and InFlightItems count the object's items in each state (more than one
	// when the queue holds several items of the object, as graphChanges does).
	QueuedItems   int       `json:"queuedItems,omitempty"`
	InFlightItems int       `json:"inFlightItems,omitempty"`
	Since         time.Time `json:"since"`
	// BackoffUntil: a retry is scheduled for then.
	BackoffUntil *time.Time `json:"backoffUntil,omitempty"`
	Retries      int        `json:"retries,omitempty"`
}

// QueueState is a queue as a snapshot shows it.
type QueueState struct {
	Name     QueueName   `json:"name"`
	Depth    int         `json:"depth"`
	InFlight int         `json:"inFlight"`
	Backoff  int         `json:"backoff"`
	Adds     uint64      `json:"adds"`
	Retries  uint64      `json:"retries"`
	Items    []QueueItem `json:"items,omitempty"`
	Recent   []Action    `json:"recent,omitempty"`
}

func newQueueMirror(name QueueName) *queueMirror {
	return &queueMirror{name: name, items: map[types.UID]*QueueItem{}}
}

func (m *queueMirror) apply(e *QueueEvent, now time.Time) {
	it := m.items[e.Object.UID]
	if it == nil {
		it = &QueueItem{Object: e.Object, Since: now}
		m.items[e.Object.UID] = it
	}
	it.Object, it.Retries = e.Object, e.Retries
	if e.Change != "" {
		it.Change = e.Change
	}
	switch e.Op {
	case QueueAdded:
		m.adds++
		if !e.Merged {
			if it.QueuedItems == 0 {
				it.Since = now
			}
			it.QueuedItems++
			m.queued++
		}
		it.BackoffUntil = nil
	case QueueAddedAfter:
		m.retries++
		until := now.Add(e.Delay)
		it.BackoffUntil = &until
	case QueueTaken:
		if it.QueuedItems > 0 {
			it.QueuedItems--
			m.queued--
		}
		it.InFlightItems++
		m.inFlight++
		it.Since = now
	case QueueDone:
		if it.InFlightItems > 0 {
			it.InFlightItems--
			m.inFlight--
		}
	case QueueForgotten:
		it.Retries = 0
	}
	it.Queued, it.InFlight = it.QueuedItems > 0, it.InFlightItems > 0
	if !it.Queued && !it.InFlight && it.BackoffUntil == nil && it.Retries == 0 {
		delete(m.items, e.Object.UID)
	}
}

func (m *queueMirror) record(a Action) {
	if len(m.recent) < recentActions {
		m.recent = append(m.recent, a)
		return
	}
	m.recent[m.next] = a
	m.next = (m.next + 1) % recentActions
}

// state copies the mirror; items sorted by uid, actions oldest first.
func (m *queueMirror) state() QueueState {
	s := QueueState{Name: m.name, Depth: m.queued, InFlight: m.inFlight, Adds: m.adds, Retries: m.retries}
	s.Items = make([]QueueItem, 0, len(m.items))
	for _, it := range m.items {
		c := *it
		if c.BackoffUntil != nil {
			s.Backoff++
		}
		s.Items = append(s.Items, c)
	}
	slices.SortFunc(s.Items, func(a, b QueueItem) int { return cmp.Compare(a.Object.UID, b.Object.UID) })
	s.Recent = append(slices.Clone(m.recent[m.next:]), m.recent[:m.next]...)
	return s
}

// refOf converts an internal identity to the feed's form.
func refOf(r objectReference) ObjectRef {
	return ObjectRef{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID}
}

func ownerRefOf(r metav1.OwnerReference) OwnerRef {
	return OwnerRef{
		APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, UID: r.UID,
		Controller:         r.Controller != nil && *r.Controller,
		BlockOwnerDeletion: r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion,
	}
}

// stateOf describes n for the feed. Requires graph.mu.
func stateOf(n *node) *NodeState {
	s := &NodeState{
		ObjectRef:          refOf(n.identity),
		Finalizers:         slices.Clone(n.finalizers),
		DeletionTimestamp:  n.deletionTimestamp,
		BeingDeleted:       n.beingDeleted,
		DeletingDependents: n.deletingDependents,
		Virtual:            n.virtual,
		Observed:           !n.virtual,
		Orphaned:           slices.Clone(n.orphaned),
	}
	if len(n.owners) > 0 {
		s.Owners = make([]OwnerRef, len(n.owners))
		for i, o := range n.owners {
			s.Owners[i] = ownerRefOf(o)
		}
	}
	return s
}

func edgeOf(dependent types.UID, ref metav1.OwnerReference) *Edge {
	o := ownerRefOf(ref)
	return &Edge{Dependent: dependent, Owner: ref.UID, Controller: o.Controller, BlockOwnerDeletion: o.BlockOwnerDeletion}
}
