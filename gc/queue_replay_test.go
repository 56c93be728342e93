package gc_test

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// replayedQueue is one queue as a client of the stream follows it (as the browser's
// store does): from a snapshot's counts and items, then each transition.
type replayedQueue struct {
	depth, inFlight int
	queued, flight  map[types.UID]int
	listed          int // objects with an item queued or in flight
	// counts are the queue's counts the last transition told.
	counts *gc.QueueCounts
}

// replayQueues applies the queue events of events to the queues of base.
func replayQueues(base gc.Snapshot, events []gc.Event) map[gc.QueueName]*replayedQueue {
	out := map[gc.QueueName]*replayedQueue{}
	for _, q := range base.Queues {
		r := &replayedQueue{depth: q.Depth, inFlight: q.InFlight, queued: map[types.UID]int{}, flight: map[types.UID]int{}}
		for _, it := range q.Items {
			r.queued[it.Object.UID], r.flight[it.Object.UID] = it.QueuedItems, it.InFlightItems
		}
		out[q.Name] = r
	}
	for _, e := range events {
		if e.Queue == nil || out[e.Queue.Queue] == nil {
			continue
		}
		r, uid := out[e.Queue.Queue], e.Queue.Object.UID
		r.counts = e.Queue.Counts
		switch e.Queue.Op {
		case gc.QueueAdded:
			if !e.Queue.Merged {
				r.queued[uid]++
				r.depth++
			}
		case gc.QueueTaken:
			if r.queued[uid] > 0 {
				r.queued[uid]--
				r.depth--
			}
			r.flight[uid]++
			r.inFlight++
		case gc.QueueDone:
			if r.flight[uid] > 0 {
				r.flight[uid]--
				r.inFlight--
			}
		}
	}
	for _, r := range out {
		listed := map[types.UID]bool{}
		for uid, n := range r.queued {
			listed[uid] = listed[uid] || n > 0
		}
		for uid, n := range r.flight {
			listed[uid] = listed[uid] || n > 0
		}
		for _, on := range listed {
			if on {
				r.listed++
			}
		}
	}
	return out
}
