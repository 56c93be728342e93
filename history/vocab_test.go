package history

import (
	"reflect"
	"testing"
	"time"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/gc/feedtest"
)

// The feed's event types, as history's consumers of the vocabulary see them: each test
// walks gc.EventTypes, so a type added there fails here until history decides about it.

// The type codes are on disk in every recording: a renumbering would misread them all.
func TestTypeCodesArePinnedAndEveryEventTypeHasOne(t *testing.T) {
	pinned := map[gc.EventType]byte{
		gc.NodeAdded: 1, gc.NodeUpdated: 2, gc.NodeRemoved: 3, gc.EdgeAdded: 4, gc.EdgeRemoved: 5,
		gc.QueueChange: 6, gc.ActionTaken: 7, gc.SyncChange: 8, gc.ShadowChange: 9,
	}
	for typ, code := range pinned {
		if got := typeVocab.code(string(typ)); got != code {
			t.Errorf("event type %q has code %d; it is stored as %d: codes are append-only", typ, got, code)
		}
	}
	for _, typ := range gc.EventTypes() {
		if c := typeVocab.code(string(typ)); c == 0 || c == typeVocab.other() {
			t.Errorf("event type %q has no code in history's typeVocab (codes.go): append it", typ)
		}
	}
	dims := []vocab{typeVocab, queueVocab, verbVocab, opVocab, resultVocab}
	for i := range len(dims) - 1 {
		if top := dims[i].bit(dims[i].other()); top >= dims[i+1].bit(1) {
			t.Errorf("the %s codes reach bit %#x, the %s codes' first: move the bases", dims[i].name, top, dims[i+1].name)
		}
	}
	if top := resultVocab.bit(resultVocab.other()); top >= 1<<63 {
		t.Errorf("the result codes reach bit 63 of the mask")
	}
}

// Replay skips the body of the types it says change nothing but the seq: for each type,
// the decision is checked against what the Replica does with a sample of it.
func TestReplayDecidesEveryEventType(t *testing.T) {
	for i, typ := range gc.EventTypes() {
		changes, ok := replayChanges[typ]
		if !ok {
			t.Errorf("replayChanges (state.go) has no entry for event type %q", typ)
			continue
		}
		e, err := feedtest.Sample(typ, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		// The replica holds the sample's object as it was before: each sample changes it.
		before := gc.Snapshot{Nodes: []gc.NodeState{{ObjectRef: gc.ObjectRef{Name: "sample", UID: "uid-sample"}, Finalizers: []string{"before"}}}}
		applied, skipped := gc.NewReplica(&before), gc.NewReplica(&before)
		if err := applied.Apply(&e); err != nil {
			t.Fatal(err)
		}
		skipped.Apply(&gc.Event{Seq: e.Seq, Type: typ})
		if differ := !reflect.DeepEqual(applied.Snapshot(), skipped.Snapshot()); differ != changes {
			t.Errorf("replayChanges[%q] is %t, but applying a sample changes the state: %t", typ, changes, differ)
		}
	}
}

// Each type has a way to be tagged with its cascade (or is declared about no object);
// with a cascade open on the sample's object, the sample is tagged with it.
func TestCascadesDecideEveryEventType(t *testing.T) {
	aboutNoObject := map[gc.EventType]bool{gc.SyncChange: true}
	for i, typ := range gc.EventTypes() {
		if cascadeTagging[typ] == nil {
			t.Errorf("cascadeTagging (cascade.go) has no entry for event type %q", typ)
			continue
		}
		e, err := feedtest.Sample(typ, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		cs := newCascades(time.Second, 1)
		c := cs.start(gc.ObjectRef{Kind: "ConfigMap", Name: "sample", UID: "uid-sample"}, policyBackground, e.Time, 1, 1)
		cs.join(c, "uid-sample")
		got := cs.observe(&e, 2, 1, gc.NewReplica(&gc.Snapshot{}))
		if want := map[bool]int64{false: c.ID, true: 0}[aboutNoObject[typ]]; got != want {
			t.Errorf("a %s event about a member of cascade %d is tagged %d, want %d", typ, c.ID, got, want)
		}
	}
}
