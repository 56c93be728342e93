package history

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gcscope/gcscope/gc"
)

// Orphan marks are part of the node states the recorder keeps: time travel shows a mark
// at the moments it was held, and a reader who may not see the former owner is not told
// it, in the recorded events nor in an export's checkpoints.
func TestRecordedOrphanMarks(t *testing.T) {
	e := newSynth(1<<16, 7)
	s := openStore(t, Options{})
	record(t, s, e, fast)
	tr := e.grow(1)
	owner, dep := tr.owner, tr.deps[0]
	marked := gc.NodeState{ObjectRef: dep, Observed: true, Orphaned: []gc.OrphanMark{{
		Owner: owner, Cause: gc.OrphanDelete, By: "the garbage collector (gcscope's engine)", At: time.Unix(1_800_000_000, 0).UTC(),
		Reason: "the Orphan delete of ReplicaSet " + owner.Name + " (its dependents stay, without their reference to it)"}}}
	e.publish(gc.Event{Type: gc.EdgeRemoved, Edge: &gc.Edge{Dependent: dep.UID, Owner: owner.UID}},
		gc.Event{Type: gc.NodeUpdated, Node: &marked})
	markedSeq := e.feed.LastSeq()
	dismissed := marked
	dismissed.Orphaned = nil
	e.publish(gc.Event{Type: gc.NodeUpdated, Node: &dismissed})
	waitRecorded(t, s, e.feed.LastSeq())
	ctx := context.Background()

	at, err := s.StateAtSeq(ctx, 1, markedSeq)
	if err != nil {
		t.Fatal(err)
	}
	node := func(st State) gc.NodeState {
		for _, n := range st.Nodes {
			if n.UID == dep.UID {
				return n
			}
		}
		t.Fatalf("no node %s in the state", dep.UID)
		return gc.NodeState{}
	}
	if got := node(at).Orphaned; len(got) != 1 || got[0] != marked.Orphaned[0] {
		t.Errorf("state at the mark: orphaned = %+v, want %+v", got, marked.Orphaned)
	}
	after, err := s.StateAtSeq(ctx, 1, e.feed.LastSeq())
	if err != nil {
		t.Fatal(err)
	}
	if got := node(after).Orphaned; len(got) != 0 {
		t.Errorf("state after the dismissal: orphaned = %+v, want none", got)
	}

	// A reader who may see the dependent and not its former owner (another kind).
	visible := func(r gc.ObjectRef) bool { return r.Kind == "Pod" }
	recs := allPages(t, s, Query{Limit: MaxLimit, Visible: visible})
	found := false
	for _, r := range recs {
		if r.Node != nil && len(r.Node.Orphaned) > 0 {
			found = true
			if m := r.Node.Orphaned[0]; !m.OwnerHidden || m.Owner.Name != "" || strings.Contains(m.Reason, owner.Name) {
				t.Errorf("recorded mark told to a reader who may not see the owner: %+v", m)
			}
		}
	}
	if !found {
		t.Error("the recorded events hold no mark")
	}
	snap := narrowSnapshot(at.Snapshot, visible)
	for _, n := range snap.Nodes {
		for _, m := range n.Orphaned {
			if !m.OwnerHidden {
				t.Errorf("export checkpoint's mark names the owner: %+v", m)
			}
		}
	}
}
