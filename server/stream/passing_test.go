package stream

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
)

// queueModel is what a client holds of the queues, by the rules of docs/stream.md: each
// object's items waiting and in flight, the adds, and the whole queue's counts as the last
// event said them.
type queueModel struct {
	adds   map[gc.QueueName]int
	counts map[gc.QueueName]gc.QueueCounts
	items  map[string][2]int // queue/uid → waiting, in flight
}

func (m *queueModel) apply(t *testing.T, data []byte) {
	t.Helper()
	var e struct {
		Queue *struct {
			Queue  gc.QueueName    `json:"queue"`
			Op     gc.QueueOp      `json:"op"`
			Object gc.ObjectRef    `json:"object"`
			Merged bool            `json:"merged"`
			Passed int             `json:"passed"`
			Counts *gc.QueueCounts `json:"counts"`
		} `json:"queue"`
	}
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	q := e.Queue
	if q == nil {
		return
	}
	key := string(q.Queue) + "/" + string(q.Object.UID)
	it := m.items[key]
	switch q.Op {
	case QueuePassed:
		m.adds[q.Queue] += q.Passed
	case gc.QueueAdded:
		m.adds[q.Queue]++
		if !q.Merged {
			it[0]++
		}
	case gc.QueueTaken:
		it[0]--
		it[1]++
	case gc.QueueDone:
		it[1]--
	}
	if q.Op != QueuePassed {
		if it == [2]int{} {
			delete(m.items, key)
		} else {
			m.items[key] = it
		}
	}
	if q.Counts != nil {
		m.counts[q.Queue] = *q.Counts
	}
}

func (m *queueModel) String() string {
	return fmt.Sprint(m.adds, m.counts, m.items)
}

func newQueueModel(items map[string][2]int) *queueModel {
	return &queueModel{adds: map[gc.QueueName]int{}, counts: map[gc.QueueName]gc.QueueCounts{}, items: items}
}

// TestPassingItemsAreCounted: in one frame, the graphChanges items that came and went are
// sent as one "passed" event, where the last of them was; an item waiting or in flight
// from before the frame, one left in it, one backed off, and every other queue's
// transitions are sent one by one. A client applying the frame holds what it would
// holding every transition.
func TestPassingItemsAreCounted(t *testing.T) {
	seq := uint64(100)
	depth, inFlight := 0, 0
	q := func(name gc.QueueName, op gc.QueueOp, uid string, merged bool) gc.Event {
		seq++
		switch {
		case op == gc.QueueAdded && !merged:
			depth++
		case op == gc.QueueTaken:
			depth--
			inFlight++
		case op == gc.QueueDone:
			inFlight--
		}
		return gc.Event{Seq: seq, Time: time.Unix(1700000000, 0), Type: gc.QueueChange, Queue: &gc.QueueEvent{Queue: name, Op: op,
			Object: gc.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: uid, UID: types.UID(uid)}, Merged: merged,
			Counts: &gc.QueueCounts{Depth: depth, InFlight: inFlight}}}
	}
	node := func(uid string) gc.Event {
		seq++
		return gc.Event{Seq: seq, Type: gc.NodeUpdated, Node: &gc.NodeState{ObjectRef: gc.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: uid, UID: types.UID(uid)}}}
	}
	const G, D = gc.GraphChanges, gc.AttemptToDelete
	// Before the frame: old has an item in flight, waiting has one queued.
	depth, inFlight = 1, 1
	before := map[string][2]int{"graphChanges/old": {0, 1}, "graphChanges/waiting": {1, 0}}
	events := []gc.Event{
		q(G, gc.QueueAdded, "a", false), q(G, gc.QueueTaken, "a", false), node("a"), q(G, gc.QueueForgotten, "a", false),
		q(G, gc.QueueAdded, "b", false), q(G, gc.QueueAdded, "b", true), // b: merged into its own item of this frame
		q(G, gc.QueueDone, "old", false), // from before
		q(D, gc.QueueAdded, "a", false),  // another queue
		q(G, gc.QueueTaken, "b", false), q(G, gc.QueueDone, "a", false),
		q(G, gc.QueueAdded, "left", false), // left waiting
		q(G, gc.QueueTaken, "waiting", false),
		q(G, gc.QueueDone, "waiting", false), // from before
		q(G, gc.QueueDone, "b", false),       // the last to pass
		q(G, gc.QueueAdded, "retried", false), q(G, gc.QueueTaken, "retried", false), q(G, gc.QueueDone, "retried", false),
		q(G, gc.QueueAddedAfter, "retried", false), // backed off
		node("b"),
	}
	raw := make([][]byte, len(events))
	for i, e := range events {
		raw[i] = encodeEvent(e)
	}
	out := appendFolded(nil, events, raw)

	var sent []string
	for _, data := range out {
		var e struct {
			Seq   uint64 `json:"seq"`
			Type  string `json:"type"`
			Queue *struct {
				Op     string `json:"op"`
				Object *struct {
					UID string `json:"uid"`
				} `json:"object"`
				Passed int `json:"passed"`
			} `json:"queue"`
			Node *struct {
				UID string `json:"uid"`
			} `json:"node"`
		}
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatal(err)
		}
		switch {
		case e.Node != nil:
			sent = append(sent, fmt.Sprintf("%d node %s", e.Seq, e.Node.UID))
		case e.Queue.Op == string(QueuePassed):
			if e.Queue.Object != nil {
				t.Errorf("the passed event names an object: %s", data)
			}
			sent = append(sent, fmt.Sprintf("%d passed %d", e.Seq, e.Queue.Passed))
		default:
			sent = append(sent, fmt.Sprintf("%d %s %s", e.Seq, e.Queue.Op, e.Queue.Object.UID))
		}
	}
	want := []string{"103 node a", "107 done old", "108 added a", "111 added left", "112 taken waiting", "113 done waiting",
		"114 passed 3", "115 added retried", "116 taken retried", "117 done retried", "118 addedAfter retried", "119 node b"}
	if strings.Join(sent, "\n") != strings.Join(want, "\n") {
		t.Errorf("the frame sent\n%s\nwant\n%s", strings.Join(sent, "\n"), strings.Join(want, "\n"))
	}

	one, folded := newQueueModel(maps.Clone(before)), newQueueModel(maps.Clone(before))
	for _, data := range raw {
		one.apply(t, data)
	}
	for _, data := range out {
		folded.apply(t, data)
	}
	if one.String() != folded.String() {
		t.Errorf("applied folded, the client holds %v; applied one by one, %v", folded, one)
	}

	// A frame with no item passing is sent as it is.
	events = events[:3]
	if got := appendFolded(nil, events, raw[:3]); len(got) != 3 {
		t.Errorf("a frame with no item passing became %d events, want its 3", len(got))
	}
}
