package gc_test

import (
	"errors"
	"testing"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/gc/feedtest"
)

func TestEventTypesAreDistinctAndEachNamesItsPayload(t *testing.T) {
	seen := map[gc.EventType]bool{}
	for _, typ := range gc.EventTypes() {
		if typ == "" || seen[typ] {
			t.Errorf("event type %q is empty or listed twice", typ)
		}
		seen[typ] = true
		if _, err := feedtest.Sample(typ, 1); err != nil {
			t.Error(err)
		}
	}
	if p := gc.EventType("noSuchType").Payload(); p != "" {
		t.Errorf("an undeclared type has payload %q, want none", p)
	}
}

// The Replica has a case for every type of the vocabulary: a type it does not know is
// reported, so a type added to gc.EventTypes without a decision here fails this test.
func TestReplicaAppliesEveryEventType(t *testing.T) {
	for i, typ := range gc.EventTypes() {
		e, err := feedtest.Sample(typ, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		r := gc.NewReplica(&gc.Snapshot{})
		if err := r.Apply(&e); err != nil {
			t.Errorf("Replica.Apply(%s): %v", typ, err)
			continue
		}
		if r.Seq() != e.Seq {
			t.Errorf("Replica.Apply(%s): seq %d, want %d", typ, r.Seq(), e.Seq)
		}
		_, held := r.Node("uid-sample")
		if want := typ == gc.NodeAdded || typ == gc.NodeUpdated; held != want {
			t.Errorf("Replica.Apply(%s): holds the sample node: %t, want %t", typ, held, want)
		}
		if _, counts, _ := r.QueueItem(gc.AttemptToDelete, "uid-sample"); (counts.Depth == 1) != (typ == gc.QueueChange) {
			t.Errorf("Replica.Apply(%s): attemptToDelete depth %d", typ, counts.Depth)
		}
	}
	r := gc.NewReplica(&gc.Snapshot{})
	if err := r.Apply(&gc.Event{Seq: 1, Type: "noSuchType"}); !errors.Is(err, gc.ErrUnknownEventType) || r.Seq() != 1 {
		t.Errorf("Replica.Apply of an unknown type: %v, seq %d; want ErrUnknownEventType, seq 1", err, r.Seq())
	}
}
