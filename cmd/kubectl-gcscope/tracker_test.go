package main

import (
	"slices"
	"testing"
	"time"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/gc/feedtest"
)

// The tracker decides for every type of the feed's vocabulary whether it is a change that
// matters (each of the samples is: a new observed node, an attemptToDelete transition, an
// edge, an action, a sync or shadow change); a type it has no case for is reported.
func TestTrackerHandlesEveryEventType(t *testing.T) {
	for i, typ := range gc.EventTypes() {
		e, err := feedtest.Sample(typ, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		tr := newTracker(nil)
		tr.changed = time.Time{}
		if unknown := tr.apply([]gc.Event{e}); len(unknown) > 0 {
			t.Errorf("tracker.apply does not handle event type %q", typ)
			continue
		}
		if tr.seq != e.Seq || tr.changed.IsZero() {
			t.Errorf("tracker.apply(%s): seq %d, changed %v; want seq %d and a change", typ, tr.seq, tr.changed, e.Seq)
		}
		objects, busy := tr.counts()
		if want := typ == gc.NodeAdded || typ == gc.NodeUpdated; (objects == 1) != want {
			t.Errorf("tracker.apply(%s): %d objects observed", typ, objects)
		}
		if want := typ == gc.QueueChange; (busy == 1) != want {
			t.Errorf("tracker.apply(%s): %d items busy", typ, busy)
		}
	}
	tr := newTracker(nil)
	if unknown := tr.apply([]gc.Event{{Seq: 1, Type: "noSuchType"}}); !slices.Equal(unknown, []gc.EventType{"noSuchType"}) {
		t.Errorf("tracker.apply of an unknown type returned %v, want it reported", unknown)
	}
}
