package gc

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gcscope/gcscope/internal/testkit"
)

// lastQueueEvent is the newest queue event of tq's feed.
func (tq *truthQueue[T]) lastQueueEvent(t *testing.T) QueueEvent {
	t.Helper()
	evs, err := tq.feed.Since(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Queue != nil {
			return *evs[i].Queue
		}
	}
	t.Fatal("no queue event")
	return QueueEvent{}
}

// TestQueueEventsCarryTheQueueCounts: every transition tells the whole queue's depth (the
// metric's) and in-flight count after it, and whether an add found the item waiting, so
// that a reader sent only some objects' transitions keeps the counters right.
func TestQueueEventsCarryTheQueueCounts(t *testing.T) {
	tq := newTruthQueue(t, AttemptToDelete, describeTestNode)
	a, b := truthNode("a"), truthNode("b")
	step := func(what string, op QueueOp, merged bool, inFlight int) {
		t.Helper()
		e := tq.lastQueueEvent(t)
		want := QueueCounts{Depth: gaugeValue(tq.depth), InFlight: inFlight}
		if e.Op != op || e.Merged != merged || e.Counts == nil || *e.Counts != want {
			t.Fatalf("%s: event %+v (counts %+v), want op %s, merged %v, counts %+v", what, e, e.Counts, op, merged, want)
		}
		if m := tq.mirror(); m.Depth != want.Depth || m.InFlight != want.InFlight {
			t.Fatalf("%s: mirror depth %d in flight %d, want %+v", what, m.Depth, m.InFlight, want)
		}
	}
	tq.Add(a)
	step("a added", QueueAdded, false, 0)
	tq.Add(a)
	step("a added again while waiting", QueueAdded, true, 0)
	tq.Add(b)
	step("b added", QueueAdded, false, 0)
	got := recv(t, getAsync(tq.workQueue), "worker")
	step("taken", QueueTaken, false, 1)
	tq.Add(got)
	step("added again while in flight", QueueAdded, false, 1)
	tq.AddRateLimited(got)
	step("requeued with backoff", QueueAddedAfter, false, 1)
	tq.Done(got)
	step("done: back in", QueueDone, false, 0)

	raw, err := json.Marshal(tq.lastQueueEvent(t))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"counts":{"depth":2,"inFlight":0}`) {
		t.Errorf("wire form %s: want the counts", raw)
	}
	// The backoff's own add comes later; wait for it before draining.
	testkit.EventuallyWithin(t, 5*time.Second, "the add after the backoff comes", func() bool {
		return !slices.ContainsFunc(tq.mirror().Items, func(it QueueItem) bool { return it.BackoffUntil != nil })
	})
	for tq.Len() > 0 {
		it := recv(t, getAsync(tq.workQueue), "worker")
		tq.Forget(it)
		tq.Done(it)
	}
	tq.check(t, "drained", 0, 0)
}

// TestQueueMirrorCountsItemsPerObject: the snapshot's items say how many of each
// object's changes wait and are in flight.
func TestQueueMirrorCountsItemsPerObject(t *testing.T) {
	tq := newTruthQueue(t, GraphChanges, (*event).describe)
	for range 3 {
		tq.Add(truthEvent("a", updateEvent))
	}
	ev := recv(t, getAsync(tq.workQueue), "graph builder")
	m := tq.mirror()
	if len(m.Items) != 1 {
		t.Fatalf("items %+v: want one object", m.Items)
	}
	it := m.Items[0]
	if !it.Queued || !it.InFlight || it.QueuedItems != 2 || it.InFlightItems != 1 {
		t.Errorf("item %+v: want 2 queued and 1 in flight", it)
	}
	raw, _ := json.Marshal(it)
	if !strings.Contains(string(raw), `"queuedItems":2,"inFlightItems":1`) {
		t.Errorf("wire form %s: want the item counts", raw)
	}
	tq.Done(ev)
	tq.Forget(ev)
}
