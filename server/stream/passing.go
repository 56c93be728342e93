package stream

// graphChanges items that come and go within one frame are sent as a count.

import (
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// QueuePassed is the op of a stream-only queue event: graphChanges items that were added,
// taken and done within one frame, counted (Passed: their adds) rather than sent one
// transition at a time. Each observed change makes four transitions (added, taken,
// forgotten, done), most of a page's bytes under churn, and applied together they change
// nothing but the queue's adds.
const QueuePassed gc.QueueOp = "passed"

// passedEvent is the wire form of a QueuePassed event.
type passedEvent struct {
	Seq   uint64       `json:"seq"`
	Time  time.Time    `json:"time"`
	Type  gc.EventType `json:"type"`
	Queue passedQueue  `json:"queue"`
}

type passedQueue struct {
	Queue  gc.QueueName    `json:"queue"`
	Op     gc.QueueOp      `json:"op"`
	Passed int             `json:"passed"`
	Counts *gc.QueueCounts `json:"counts,omitempty"`
}

// passing finds, among the events a frame will carry, the graphChanges transitions of the
// objects whose items all came and went within it: every item added in the frame (none
// waiting or in flight before it, none left after it), without backoff. It returns
// whether each event is one of those (nil when none is) and the encoded QueuePassed event
// that replaces them, to be sent where the last of them was: the queue's counts it
// carries are that event's, so the counts a client holds after the frame are unchanged.
func passing(events []gc.Event) (folded []bool, last int, replacement []byte) {
	type level struct {
		queued, inFlight int
		broken           bool // a transition of an item from before the frame, or a backoff
	}
	var objects map[types.UID]*level
	for i := range events {
		q := events[i].Queue
		if q == nil || q.Queue != gc.GraphChanges {
			continue
		}
		if objects == nil {
			objects = map[types.UID]*level{}
		}
		l := objects[q.Object.UID]
		if l == nil {
			l = &level{}
			objects[q.Object.UID] = l
		}
		switch q.Op {
		case gc.QueueAdded:
			if !q.Merged {
				l.queued++
			} else if l.queued == 0 {
				l.broken = true // merged into an item waiting from before
			}
		case gc.QueueTaken:
			if l.queued == 0 {
				l.broken = true
			}
			l.queued--
			l.inFlight++
		case gc.QueueDone:
			if l.inFlight == 0 {
				l.broken = true
			}
			l.inFlight--
		case gc.QueueForgotten:
			// The graph builder forgets each item it took (its backoff, never started):
			// nothing a client holds changes, unless the item had retries.
			if l.inFlight == 0 || q.Retries != 0 {
				l.broken = true
			}
		default:
			l.broken = true
		}
	}
	adds, last := 0, -1
	for i := range events {
		q := events[i].Queue
		if q == nil || q.Queue != gc.GraphChanges {
			continue
		}
		if l := objects[q.Object.UID]; l.broken || l.queued != 0 || l.inFlight != 0 {
			continue
		}
		if folded == nil {
			folded = make([]bool, len(events))
		}
		folded[i] = true
		last = i
		if q.Op == gc.QueueAdded {
			adds++
		}
	}
	if folded == nil {
		return nil, -1, nil
	}
	e := events[last]
	data, err := json.Marshal(passedEvent{Seq: e.Seq, Time: e.Time, Type: gc.QueueChange,
		Queue: passedQueue{Queue: gc.GraphChanges, Op: QueuePassed, Passed: adds, Counts: e.Queue.Counts}})
	if err != nil {
		return nil, -1, nil // a time json cannot write: the transitions go one by one
	}
	return folded, last, data
}

// appendFolded appends to dst the encodings of events (raw), the graphChanges items that
// passed within them as one QueuePassed event (passing).
func appendFolded(dst [][]byte, events []gc.Event, raw [][]byte) [][]byte {
	folded, last, replacement := passing(events)
	for i := range events {
		switch {
		case folded == nil || !folded[i]:
			dst = append(dst, raw[i])
		case i == last:
			dst = append(dst, replacement)
		}
	}
	return dst
}
