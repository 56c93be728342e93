package history

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// synth is a synthetic engine for tests and benchmarks: it publishes the engine's kinds
// of events in the engine's order (objects observed with their owners; cascades with
// queue transitions, look-ups, deletes, a conflict and a retry now and then) on a real
// gc.Feed, and answers Snapshot consistently with that feed, as the engine does. Its
// state is kept by applying what it publishes to a replica; the real engine, in
// engine_test.go, is the authority on the replica's rules.
type synth struct {
	mu   sync.Mutex
	feed *gc.Feed
	rep  *gc.Replica
	rng  *rand.Rand
	made int
	// trees are the live owners and their dependents.
	trees []tree
}

type tree struct {
	owner gc.ObjectRef
	deps  []gc.ObjectRef
}

func newSynth(feedSize int, seed uint64) *synth {
	s := &synth{feed: gc.NewFeed(feedSize), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	s.rep = gc.NewReplica(&gc.Snapshot{Mode: gc.ModeActive})
	s.publish(gc.Event{Type: gc.SyncChange, Sync: &gc.SyncState{Resources: []string{"apps/v1/replicasets", "v1/pods"}}})
	return s
}

func (s *synth) Feed() *gc.Feed { return s.feed }

func (s *synth) Snapshot() gc.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rep.Snapshot()
}

// publish publishes events as one step and applies them (with the seq and time the feed
// gave them) to the synthetic state.
func (s *synth) publish(evs ...gc.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishLocked(evs...)
}

func (s *synth) publishLocked(evs ...gc.Event) {
	last := s.feed.Publish(evs...)
	got, err := s.feed.Since(last-uint64(len(evs)), len(evs))
	if err != nil {
		// More than the ring holds: apply them as the feed numbered them. Their times are
		// lost, and only queue transitions use them.
		got = slices.Clone(evs)
		for i := range got {
			if got[i].Queue != nil {
				panic(fmt.Sprintf("synth: a queue transition in a publish larger than the ring: %v", err))
			}
			got[i].Seq = last - uint64(len(evs)) + uint64(i) + 1
		}
	}
	for i := range got {
		s.rep.Apply(&got[i])
	}
}

// nodes is how many nodes the synthetic graph holds.
func (s *synth) nodes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rep.Len()
}

func (s *synth) uid() types.UID {
	s.made++
	return types.UID(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", s.rng.Uint32(), s.made&0xffff, s.rng.IntN(4096), s.rng.IntN(4096), s.rng.Uint64()&0xffffffffffff))
}

// grow adds one owner with n dependents, as the graph builder observes them.
func (s *synth) grow(n int) tree {
	s.mu.Lock()
	ns := fmt.Sprintf("shop-%d", s.rng.IntN(20))
	owner := gc.ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: ns, Name: fmt.Sprintf("web-%d-%x", s.made, s.rng.Uint32()), UID: s.uid()}
	t := tree{owner: owner}
	for i := range n {
		t.deps = append(t.deps, gc.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("%s-%d%x", owner.Name, i, s.rng.Uint32()), UID: s.uid()})
	}
	s.mu.Unlock()
	s.observe(&gc.NodeState{ObjectRef: owner, Observed: true})
	for _, d := range t.deps {
		s.observe(&gc.NodeState{ObjectRef: d, Observed: true, Owners: []gc.OwnerRef{{
			APIVersion: owner.APIVersion, Kind: owner.Kind, Name: owner.Name, UID: owner.UID, Controller: true, BlockOwnerDeletion: true}}})
	}
	s.mu.Lock()
	s.trees = append(s.trees, t)
	s.mu.Unlock()
	return t
}

// observe publishes one object's arrival through graphChanges.
func (s *synth) observe(n *gc.NodeState) {
	s.queue(gc.GraphChanges, gc.QueueAdded, n.ObjectRef, "add", 0, 0)
	s.queue(gc.GraphChanges, gc.QueueTaken, n.ObjectRef, "add", 0, 0)
	evs := []gc.Event{{Type: gc.NodeAdded, Node: n}}
	for _, o := range n.Owners {
		evs = append(evs, gc.Event{Type: gc.EdgeAdded, Edge: &gc.Edge{Dependent: n.UID, Owner: o.UID, Controller: o.Controller, BlockOwnerDeletion: o.BlockOwnerDeletion}})
	}
	s.publish(evs...)
	s.queue(gc.GraphChanges, gc.QueueDone, n.ObjectRef, "add", 0, 0)
}

func (s *synth) queue(q gc.QueueName, op gc.QueueOp, obj gc.ObjectRef, change string, delay time.Duration, retries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := &gc.QueueEvent{Queue: q, Op: op, Object: obj, Change: change, Delay: delay, Retries: retries}
	// The counts just after the transition, as the engine sends them.
	it, c, _ := s.rep.QueueItem(q, obj.UID)
	switch op {
	case gc.QueueAdded:
		c.Depth++
	case gc.QueueTaken:
		if it.QueuedItems > 0 {
			c.Depth--
		}
		c.InFlight++
	case gc.QueueDone:
		if it.InFlightItems > 0 {
			c.InFlight--
		}
	}
	ev.Counts = &c
	s.publishLocked(gc.Event{Type: gc.QueueChange, Queue: ev})
}

func (s *synth) action(a gc.Action) { s.publish(gc.Event{Type: gc.ActionTaken, Action: &a}) }

// cascade deletes a random tree's owner in the background and collects its dependents
// as the workers would; it reports false when there is no tree.
func (s *synth) cascade() bool {
	s.mu.Lock()
	if len(s.trees) == 0 {
		s.mu.Unlock()
		return false
	}
	i := s.rng.IntN(len(s.trees))
	t := s.trees[i]
	s.trees = slices.Delete(s.trees, i, i+1)
	conflictAt := -1
	if len(t.deps) > 0 && s.rng.IntN(4) == 0 {
		conflictAt = s.rng.IntN(len(t.deps))
	}
	s.mu.Unlock()

	s.remove(t.owner, nil)
	for _, d := range t.deps {
		s.queue(gc.AttemptToDelete, gc.QueueAdded, d, "", 0, 0)
	}
	for j, d := range t.deps {
		s.queue(gc.AttemptToDelete, gc.QueueTaken, d, "", 0, 0)
		s.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbGet, Object: d, Reason: "look up the item", Duration: 900 * time.Microsecond})
		s.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbGet, Object: t.owner, For: &d,
			Reason: "look up owner of " + d.Kind + " " + d.Name + ": not found", Duration: 700 * time.Microsecond})
		if j == conflictAt {
			// A conflict (retried, as upstream's worker does) or a failure, one or the other.
			failure, reason := "Operation cannot be fulfilled: the object has been modified", "Conflict"
			if s.rng.IntN(2) == 0 {
				failure, reason = "Internal error occurred: etcdserver: request timed out", "InternalError"
			}
			s.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: d, Policy: "Background",
				Reason: "all its owners are gone: " + t.owner.Kind + " " + t.owner.Name, Error: failure, ErrorReason: reason, Duration: 2 * time.Millisecond})
			s.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbRequeue, Object: d, Reason: "retry after " + reason})
			s.queue(gc.AttemptToDelete, gc.QueueAddedAfter, d, "", 5*time.Millisecond, 1)
			s.queue(gc.AttemptToDelete, gc.QueueDone, d, "", 0, 1)
			s.queue(gc.AttemptToDelete, gc.QueueAdded, d, "", 0, 1)
			s.queue(gc.AttemptToDelete, gc.QueueTaken, d, "", 0, 1)
		}
		s.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: d, Policy: "Background",
			Reason: "all its owners are gone: " + t.owner.Kind + " " + t.owner.Name, Duration: 1500 * time.Microsecond})
		s.queue(gc.AttemptToDelete, gc.QueueForgotten, d, "", 0, 0)
		s.queue(gc.AttemptToDelete, gc.QueueDone, d, "", 0, 0)
		s.remove(d, []types.UID{t.owner.UID})
	}
	return true
}

// remove publishes an object's deletion as the graph builder sees it: an update with a
// deletionTimestamp, then the delete.
func (s *synth) remove(obj gc.ObjectRef, owners []types.UID) {
	s.mu.Lock()
	n, ok := s.rep.Node(obj.UID)
	s.mu.Unlock()
	if !ok {
		return
	}
	now := time.Now().UTC().Truncate(time.Second)
	n.BeingDeleted, n.DeletionTimestamp = true, &now
	s.queue(gc.GraphChanges, gc.QueueAdded, obj, "update", 0, 0)
	s.queue(gc.GraphChanges, gc.QueueTaken, obj, "update", 0, 0)
	s.publish(gc.Event{Type: gc.NodeUpdated, Node: &n})
	s.queue(gc.GraphChanges, gc.QueueDone, obj, "update", 0, 0)
	s.queue(gc.GraphChanges, gc.QueueAdded, obj, "delete", 0, 0)
	s.queue(gc.GraphChanges, gc.QueueTaken, obj, "delete", 0, 0)
	evs := []gc.Event{{Type: gc.NodeRemoved, Node: &n}}
	for _, o := range owners {
		evs = append(evs, gc.Event{Type: gc.EdgeRemoved, Edge: &gc.Edge{Dependent: obj.UID, Owner: o, Controller: true, BlockOwnerDeletion: true}})
	}
	s.publish(evs...)
	s.queue(gc.GraphChanges, gc.QueueDone, obj, "delete", 0, 0)
}

// churn grows the graph to about size nodes, then deletes and grows trees until at
// least events more events have been published.
func (s *synth) churn(size, events int) {
	start := s.feed.LastSeq()
	for s.nodes() < size {
		s.grow(5 + s.rng.IntN(40))
	}
	for s.feed.LastSeq()-start < uint64(events) {
		if s.nodes() > size {
			s.cascade()
		} else {
			s.grow(5 + s.rng.IntN(40))
		}
	}
}
