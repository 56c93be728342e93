package history

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/internal/testkit"
)

// quick are recorder options for cascade tests: a short quiet period.
func quick() RecorderOptions {
	o := fast
	o.CascadeQuiet = 50 * time.Millisecond
	return o
}

// foreground publishes a foreground deletion of t's owner as the engine does: the owner
// waits with the foregroundDeletion finalizer, each dependent is deleted (one delete
// meets a conflict once and is retried), then the finalizer is removed and the owner goes.
func (s *synth) foreground(t tree, halfway func()) {
	n := s.waitForDependents(t.owner)
	for _, d := range t.deps {
		s.queue(gc.AttemptToDelete, gc.QueueAdded, d, "", 0, 0)
	}
	for j, d := range t.deps {
		if j == len(t.deps)/2 && halfway != nil {
			halfway()
		}
		s.queue(gc.AttemptToDelete, gc.QueueTaken, d, "", 0, 0)
		s.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbGet, Object: t.owner, For: &d, Reason: "look up owner"})
		if j == 1 {
			s.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: d, Policy: "Background", Reason: "its owner is deleting in the foreground",
				Error: "Operation cannot be fulfilled on configmaps: the object has been modified", ErrorReason: "Conflict"})
		}
		s.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: d, Policy: "Background", Reason: "its owner is deleting in the foreground"})
		s.queue(gc.AttemptToDelete, gc.QueueDone, d, "", 0, 0)
		s.remove(d, []types.UID{t.owner.UID})
	}
	s.finishForeground(n)
}

// waitForDependents publishes obj's foreground deletion beginning: it waits, with the
// foregroundDeletion finalizer, for its dependents. It returns the node as published.
func (s *synth) waitForDependents(obj gc.ObjectRef) gc.NodeState {
	s.mu.Lock()
	n, _ := s.rep.Node(obj.UID)
	s.mu.Unlock()
	now := time.Now().UTC().Truncate(time.Second)
	n.BeingDeleted, n.DeletingDependents, n.DeletionTimestamp, n.Finalizers = true, true, &now, []string{"foregroundDeletion"}
	s.publish(gc.Event{Type: gc.NodeUpdated, Node: &n})
	return n
}

// finishForeground publishes the end of owner's foreground deletion, its dependents gone:
// the collector removes the finalizer, and the owner goes.
func (s *synth) finishForeground(owner gc.NodeState) {
	s.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbRemoveFinalizer, Object: owner.ObjectRef, Finalizer: "foregroundDeletion", Reason: "no dependent blocks it"})
	owner.Finalizers, owner.DeletingDependents = nil, false
	s.publish(gc.Event{Type: gc.NodeUpdated, Node: &owner})
	s.remove(owner.ObjectRef, nil)
}

func waitCascades(t *testing.T, s *Store, q CascadeQuery, done func([]Cascade) bool) []Cascade {
	t.Helper()
	var cs []Cascade
	settled := func() bool {
		var err error
		if cs, err = s.Cascades(context.Background(), q); err != nil {
			t.Fatal(err)
		}
		return done(cs)
	}
	if testkit.Poll(context.Background(), 20*time.Second, settled) != nil {
		t.Fatalf("cascades did not settle: %s", jsonOf(t, cs))
	}
	return cs
}

func TestCascadesAreTaggedWhileRecording(t *testing.T) {
	e := newSynth(1<<16, 11)
	s := openStore(t, Options{})
	record(t, s, e, quick())
	bg := e.grow(6)
	fg := e.grow(8)
	other := e.grow(3)
	waitRecorded(t, s, e.feed.LastSeq())

	e.mu.Lock()
	e.trees = []tree{bg} // cascade() picks bg
	e.mu.Unlock()
	e.cascade()
	var mid []Cascade
	e.foreground(fg, func() {
		waitRecorded(t, s, e.feed.LastSeq())
		mid = waitCascades(t, s, CascadeQuery{UID: string(fg.owner.UID)}, func(cs []Cascade) bool { return len(cs) == 1 })
	})
	waitRecorded(t, s, e.feed.LastSeq())
	all := waitCascades(t, s, CascadeQuery{}, func(cs []Cascade) bool {
		return len(cs) == 2 && cs[0].End != nil && cs[1].End != nil
	})

	if m := mid[0]; m.End != nil || m.Policy != "Foreground" || m.Deleted >= m.Objects {
		t.Fatalf("the foreground cascade half done: %s, want open with fewer deleted than objects", jsonOf(t, m))
	}
	byRoot := map[types.UID]Cascade{all[0].Root.UID: all[0], all[1].Root.UID: all[1]}
	for _, want := range []struct {
		tree    tree
		policy  string
		actions int
		retries int
	}{{bg, "Background", -1, -1}, {fg, "Foreground", len(fg.deps) + 2, 1}} {
		c, ok := byRoot[want.tree.owner.UID]
		if !ok {
			t.Fatalf("no cascade rooted at %s: %s", want.tree.owner.Name, jsonOf(t, all))
		}
		n := len(want.tree.deps) + 1
		if c.Policy != want.policy || c.Objects != n || c.Deleted != n || c.Root != want.tree.owner || !c.Start.Before(*c.End) || c.Note != "" {
			t.Fatalf("cascade of %s: %s, want %s, %d objects all deleted, start before end", want.tree.owner.Name, jsonOf(t, c), want.policy, n)
		}
		// The conflict is a retry, as the worker treats it: not an error.
		if want.actions >= 0 && (c.Actions != want.actions || c.Errors != 0 || c.Retries != want.retries) {
			t.Fatalf("cascade of %s: %d actions, %d errors, %d retries; want %d, 0 and %d", want.tree.owner.Name, c.Actions, c.Errors, c.Retries, want.actions, want.retries)
		}
		// Its events: every delete of a dependent, and nothing about the tree left alone.
		evs := allPages(t, s, Query{Cascade: c.ID, Limit: MaxLimit})
		deletes := map[types.UID]bool{}
		for _, r := range evs {
			if r.Cascade != c.ID {
				t.Fatalf("a record of cascade %d says %d", c.ID, r.Cascade)
			}
			if r.Object != nil && (r.Object.UID == other.owner.UID || r.Object.Namespace != c.Root.Namespace) {
				t.Fatalf("cascade %d holds an event about %s", c.ID, r.Object.Name)
			}
			if r.Action != nil && r.Action.Verb == gc.VerbDelete && r.Action.Error == "" {
				deletes[r.Action.Object.UID] = true
			}
		}
		if len(deletes) != len(want.tree.deps) {
			t.Fatalf("cascade %d's events delete %d of %d dependents", c.ID, len(deletes), len(want.tree.deps))
		}
		if got, err := s.CascadeByID(context.Background(), c.ID); err != nil || got.ID != c.ID {
			t.Fatalf("CascadeByID(%d): %v %v", c.ID, got.ID, err)
		}
	}
	// A dependent's cascades: the one that deleted it.
	if cs, _ := s.Cascades(context.Background(), CascadeQuery{UID: string(fg.deps[3].UID)}); len(cs) != 1 || cs[0].Root != fg.owner {
		t.Fatalf("cascades of a dependent: %s", jsonOf(t, cs))
	}
	if cs, _ := s.Cascades(context.Background(), CascadeQuery{UID: string(other.owner.UID)}); len(cs) != 0 {
		t.Fatalf("cascades of an object never deleted: %s", jsonOf(t, cs))
	}
	// Newest first; a reader who may not see the root does not see the cascade.
	if all[0].Start.Before(all[1].Start) {
		t.Fatalf("not newest first: %s", jsonOf(t, all))
	}
	hidden, _ := s.Cascades(context.Background(), CascadeQuery{Visible: func(r gc.ObjectRef) bool { return r.UID != fg.owner.UID }})
	if len(hidden) != 1 || hidden[0].Root != bg.owner {
		t.Fatalf("with fg's root invisible: %s", jsonOf(t, hidden))
	}
}

func TestOrphanCascadeAndAGapThatCutsOne(t *testing.T) {
	e := newSynth(128, 12) // a small ring: a large publish makes a gap
	s := openStore(t, Options{})
	record(t, s, e, quick())
	orphaned := e.grow(4)
	cut := e.grow(4)
	waitRecorded(t, s, e.feed.LastSeq())

	// Orphan: the owner waits with the orphan finalizer, its dependents lose their
	// reference, then it goes. They are members, not deleted.
	e.mu.Lock()
	n, _ := e.rep.Node(orphaned.owner.UID)
	e.mu.Unlock()
	n.BeingDeleted, n.Finalizers = true, []string{"orphan"}
	e.publish(gc.Event{Type: gc.NodeUpdated, Node: &n})
	for _, d := range orphaned.deps {
		e.action(gc.Action{Queue: gc.AttemptToOrphan, Verb: gc.VerbOrphan, Object: d, Refs: []types.UID{orphaned.owner.UID}, Reason: "its owner is deleted with the orphan policy"})
		e.mu.Lock()
		dn, _ := e.rep.Node(d.UID)
		e.mu.Unlock()
		dn.Owners = nil
		e.publish(gc.Event{Type: gc.NodeUpdated, Node: &dn})
	}
	e.remove(orphaned.owner, nil)
	waitRecorded(t, s, e.feed.LastSeq())
	cs := waitCascades(t, s, CascadeQuery{UID: string(orphaned.owner.UID)}, func(cs []Cascade) bool { return len(cs) == 1 && cs[0].End != nil })
	if c := cs[0]; c.Policy != "Orphan" || c.Objects != 5 || c.Deleted != 1 || c.Actions != 4 {
		t.Fatalf("the orphan cascade: %s, want 5 objects, 1 deleted, 4 actions", jsonOf(t, c))
	}

	// A cascade open when the recorder falls behind ends at the gap, with a note.
	e.waitForDependents(cut.owner)
	waitRecorded(t, s, e.feed.LastSeq())
	var burst []gc.Event
	for range 1000 {
		burst = append(burst, gc.Event{Type: gc.ActionTaken, Action: &gc.Action{Queue: gc.AttemptToOrphan, Verb: gc.VerbKeep, Object: cut.deps[0], Reason: "burst"}})
	}
	e.publish(burst...)
	e.grow(1)
	waitRecorded(t, s, e.feed.LastSeq())
	// The deletion is still under way in the state recorded after the gap: a new cascade.
	cs = waitCascades(t, s, CascadeQuery{UID: string(cut.owner.UID)}, func(cs []Cascade) bool { return len(cs) == 2 })
	slices.SortFunc(cs, func(a, b Cascade) int { return int(a.ID - b.ID) })
	if cut := cs[0]; cut.End == nil || !strings.Contains(cut.Note, "fell behind") || cut.Deleted != 0 {
		t.Fatalf("the cascade cut by a gap: %s, want ended with a note that says why", jsonOf(t, cut))
	}
	if again := cs[1]; again.End != nil || again.Note != underWay || again.Root != cut.owner {
		t.Fatalf("after the gap: %s, want the deletion under way open again, noted %q", jsonOf(t, again), underWay)
	}
}

// TestRestartEndsOpenCascades: a cascade open when gcscope stops is ended, with a note,
// when the next session starts (which opens the deletion still under way again); one with
// nothing left ends as gcscope stops.
func TestRestartEndsOpenCascades(t *testing.T) {
	// The recorder's windows are on the clock: synctest's, exact however loaded the machine.
	synctest.Test(t, func(t *testing.T) {
		e := newSynth(1<<16, 13)
		dir := t.TempDir()
		s := openStore(t, Options{Dir: dir})
		o := quick()
		o.CascadeQuiet = time.Hour // nothing ends by itself during the test
		stop := record(t, s, e, o)
		waiting, gone := e.grow(3), e.grow(0)
		e.waitForDependents(waiting.owner)
		e.remove(gone.owner, nil)
		waitRecorded(t, s, e.feed.LastSeq())
		time.Sleep(300 * time.Millisecond) // a stretch stuck with nothing to record, until gcscope stops
		stoppedAt := time.Now()
		stop()
		ctx := context.Background()
		byRoot := func() map[types.UID]Cascade {
			cs, err := s.Cascades(ctx, CascadeQuery{})
			if err != nil {
				t.Fatal(err)
			}
			out := map[types.UID]Cascade{}
			for _, c := range cs {
				out[c.Root.UID] = c
			}
			return out
		}
		if got := byRoot(); got[waiting.owner.UID].End != nil || got[gone.owner.UID].End == nil || got[gone.owner.UID].Note != "" {
			t.Fatalf("after a stop: %s; want the waiting one open and the finished one ended", jsonOf(t, got))
		}
		record(t, s, e, o)
		waitRecorded(t, s, e.feed.LastSeq())
		cs, err := s.Cascades(ctx, CascadeQuery{UID: string(waiting.owner.UID)})
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(cs, func(a, b Cascade) int { return int(a.ID - b.ID) })
		if len(cs) != 2 || cs[0].End == nil || !strings.Contains(cs[0].Note, "gcscope stopped before it ended") || cs[1].End != nil || cs[1].Note != underWay {
			t.Fatalf("after a restart: %s; want the cascade left open ended with a note, and the deletion still under way open again", jsonOf(t, cs))
		}
		// It was under way until gcscope stopped, not only until its last event (a trial's
		// stuck deletion was recorded as lasting 7 ms).
		if cs[0].End.Before(stoppedAt) {
			t.Errorf("the cascade cut by the stop ends at %s, before gcscope stopped at %s", cs[0].End.Format(time.RFC3339Nano), stoppedAt.Format(time.RFC3339Nano))
		}
	})
}

// TestAGoneRootIsDeletedOnce: the graph may make a virtual node for a root that is gone
// (a dependent still names it) and remove it again; the cascade counts the root once.
func TestAGoneRootIsDeletedOnce(t *testing.T) {
	e := newSynth(1<<16, 14)
	s := openStore(t, Options{})
	record(t, s, e, quick())
	tr := e.grow(2)
	e.remove(tr.owner, nil)
	virtual := gc.NodeState{ObjectRef: tr.owner, Virtual: true}
	e.publish(gc.Event{Type: gc.NodeAdded, Node: &virtual})
	e.publish(gc.Event{Type: gc.NodeRemoved, Node: &virtual})
	for _, d := range tr.deps {
		e.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: d, Policy: "Background", Reason: "all its owners are gone"})
		e.remove(d, []types.UID{tr.owner.UID})
	}
	waitRecorded(t, s, e.feed.LastSeq())
	cs := waitCascades(t, s, CascadeQuery{UID: string(tr.owner.UID)}, func(cs []Cascade) bool { return len(cs) == 1 && cs[0].End != nil })
	if c := cs[0]; c.Objects != 3 || c.Deleted != 3 || c.Actions != 2 {
		t.Fatalf("%s: want 3 objects, 3 deleted, 2 actions", jsonOf(t, c))
	}
}

// TestABackloggedCascadeStaysOneCascade: a background deletion whose dependents wait in
// the queue behind a backlog far longer than the quiet period (what a trial of 9 owners of
// 2,000 dependents each showed: every dependent became a cascade of its own) stays one
// cascade, open while a queued dependent is left, ended once the last one is deleted.
func TestABackloggedCascadeStaysOneCascade(t *testing.T) {
	// The recorder's windows are on the clock: synctest's, exact however loaded the machine.
	synctest.Test(t, func(t *testing.T) {
		e := newSynth(1<<16, 12)
		s := openStore(t, Options{})
		record(t, s, e, quick()) // quiet period: 50 ms
		tr := e.grow(5)
		waitRecorded(t, s, e.feed.LastSeq())

		// The owner is deleted; the graph queues its dependents.
		e.remove(tr.owner, nil)
		for _, d := range tr.deps {
			e.queue(gc.AttemptToDelete, gc.QueueAdded, d, "", 0, 0)
		}
		// The workers are busy elsewhere for 10 of the recorder's quiet periods.
		time.Sleep(500 * time.Millisecond)
		e.publish() // time moves on in the recording
		waitRecorded(t, s, e.feed.LastSeq())
		open := waitCascades(t, s, CascadeQuery{UID: string(tr.owner.UID)}, func(cs []Cascade) bool { return len(cs) == 1 })
		if open[0].End != nil || open[0].Objects != len(tr.deps)+1 || open[0].Deleted != 1 {
			t.Fatalf("while the dependents wait in the queue: %s, want open, %d objects, 1 deleted", jsonOf(t, open[0]), len(tr.deps)+1)
		}
		for _, d := range tr.deps {
			e.queue(gc.AttemptToDelete, gc.QueueTaken, d, "", 0, 0)
			e.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: d, Policy: "Background", Reason: "all its owners are gone"})
			e.queue(gc.AttemptToDelete, gc.QueueDone, d, "", 0, 0)
			e.remove(d, []types.UID{tr.owner.UID})
		}
		waitRecorded(t, s, e.feed.LastSeq())
		all := waitCascades(t, s, CascadeQuery{}, func(cs []Cascade) bool { return len(cs) >= 1 && cs[0].End != nil })
		if len(all) != 1 || all[0].Root != tr.owner || all[0].Objects != len(tr.deps)+1 || all[0].Deleted != len(tr.deps)+1 || all[0].Actions != len(tr.deps) {
			t.Fatalf("cascades: %s, want one rooted at %s with %d objects, all deleted, %d actions", jsonOf(t, all), tr.owner.Name, len(tr.deps)+1, len(tr.deps))
		}
	})
}

// TestACascadeUnderWayAtARestartIsOneCascade: a foreground deletion still waiting for its
// dependents when gcscope stops is one cascade of the next session, open from its start
// (before anything more happens) and ended once the root is gone, rather than a cascade
// for each dependent as it goes (what a trial saw: one later session picked it up, another
// made a cascade per dependent).
func TestACascadeUnderWayAtARestartIsOneCascade(t *testing.T) {
	e := newSynth(1<<16, 15)
	s := openStore(t, Options{Dir: t.TempDir()})
	o := quick()
	stop := record(t, s, e, o)
	tr := e.grow(4)
	owner := e.waitForDependents(tr.owner)
	e.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: tr.deps[0], Policy: "Foreground", Reason: "its owner is deleting in the foreground"})
	e.waitForDependents(tr.deps[0])
	waitRecorded(t, s, e.feed.LastSeq())
	stop()

	record(t, s, e, o)
	session := s.Status().Session
	inSession := func(cs []Cascade) []Cascade {
		var out []Cascade
		for _, c := range cs {
			if c.Session == session {
				out = append(out, c)
			}
		}
		return out
	}
	open := waitCascades(t, s, CascadeQuery{}, func(cs []Cascade) bool { return len(inSession(cs)) == 1 })
	if c := inSession(open)[0]; c.Root != tr.owner || c.Policy != policyForeground || c.End != nil || c.Objects != 2 || c.Note != underWay {
		t.Fatalf("as the next session starts: %s; want the owner's Foreground cascade open with the deleting dependent, noted %q", jsonOf(t, c), underWay)
	}

	// The rest of the deletion happens in the new session, the waiting dependent last.
	for _, d := range append(tr.deps[1:], tr.deps[0]) {
		e.queue(gc.AttemptToDelete, gc.QueueAdded, d, "", 0, 0)
		e.queue(gc.AttemptToDelete, gc.QueueTaken, d, "", 0, 0)
		if d != tr.deps[0] {
			e.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: d, Policy: "Foreground", Reason: "its owner is deleting in the foreground"})
		}
		e.queue(gc.AttemptToDelete, gc.QueueDone, d, "", 0, 0)
		e.remove(d, []types.UID{tr.owner.UID})
	}
	e.finishForeground(owner)
	waitRecorded(t, s, e.feed.LastSeq())
	ended := inSession(waitCascades(t, s, CascadeQuery{}, func(cs []Cascade) bool {
		mine := inSession(cs)
		return len(mine) > 1 || len(mine) == 1 && mine[0].End != nil
	}))
	if len(ended) != 1 {
		t.Fatalf("the new session's cascades: %s; want only the owner's", jsonOf(t, ended))
	}
	if c := ended[0]; c.Root != tr.owner || c.Objects != 5 || c.Deleted != 5 || c.Actions != 4 {
		t.Fatalf("%s: want the owner's cascade with 5 objects, all deleted, 4 actions", jsonOf(t, c))
	}
}

// TestAnObjectFirstSeenDeletingStartsACascade: when the engine starts after the recorder
// (its informers list while the recording runs), a deletion under way arrives as nodes
// added already being deleted; the root and its deleting dependent are one cascade.
func TestAnObjectFirstSeenDeletingStartsACascade(t *testing.T) {
	e := newSynth(1<<16, 16)
	s := openStore(t, Options{})
	record(t, s, e, quick())
	now := time.Now().UTC()
	owner := gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", UID: e.uid()},
		Observed: true, BeingDeleted: true, DeletingDependents: true, DeletionTimestamp: &now, Finalizers: []string{"foregroundDeletion"}}
	dep := gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "shop", Name: "web-1", UID: e.uid()},
		Observed: true, BeingDeleted: true, DeletionTimestamp: &now,
		Owners: []gc.OwnerRef{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: owner.UID, Controller: true, BlockOwnerDeletion: true}}}
	e.observe(&owner)
	e.observe(&dep)
	waitRecorded(t, s, e.feed.LastSeq())
	cs := waitCascades(t, s, CascadeQuery{}, func(cs []Cascade) bool { return len(cs) > 0 })
	if len(cs) != 1 || cs[0].Root != owner.ObjectRef || cs[0].Policy != policyForeground || cs[0].Objects != 2 {
		t.Fatalf("cascades: %s; want one, the Deployment's Foreground one with its ReplicaSet", jsonOf(t, cs))
	}
}

// startingEngine is a synthetic engine whose workers start when started is closed.
type startingEngine struct {
	*synth
	started chan struct{}
}

func (e startingEngine) Started() <-chan struct{} { return e.started }

// TestTheRecordingStartsOnceTheEngineHasListed: the recorder's first checkpoint waits
// for the engine's start (its informers have listed the cluster). A foreground deletion
// under way then is one cascade, whatever order the lists brought its objects in (a trial
// restarted gcscope mid-deletion: the dependent came first, and each object became a
// cascade of its own).
func TestTheRecordingStartsOnceTheEngineHasListed(t *testing.T) {
	e := startingEngine{newSynth(1<<16, 17), make(chan struct{})}
	s := openStore(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewRecorder(s, e, quick()).Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// The lists, the dependent first.
	now := time.Now().UTC()
	root := gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", UID: e.uid()},
		Observed: true, BeingDeleted: true, DeletingDependents: true, DeletionTimestamp: &now, Finalizers: []string{"foregroundDeletion"}}
	dep := gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "shop", Name: "web-1", UID: e.uid()},
		Observed: true, BeingDeleted: true, DeletionTimestamp: &now, Finalizers: []string{"example.com/hold"},
		Owners: []gc.OwnerRef{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: root.UID, Controller: true, BlockOwnerDeletion: true}}}
	e.observe(&dep)
	e.observe(&root)
	waitingForSync := func() bool {
		st := s.Status()
		return st.State == StateStopped && st.Message == "waiting for the engine's first sync"
	}
	testkit.Eventually(t, "before the engine started: stopped, waiting for the engine's first sync", waitingForSync)
	testkit.Consistently(t, "stopped, waiting for the engine's first sync, until it starts", 100*time.Millisecond, waitingForSync)
	close(e.started)
	cs := waitCascades(t, s, CascadeQuery{}, func(cs []Cascade) bool { return len(cs) > 0 })
	if len(cs) != 1 || cs[0].Root != root.ObjectRef || cs[0].Objects != 2 || cs[0].Note != underWay {
		t.Fatalf("cascades: %s; want one, the Deployment's, with its ReplicaSet, noted %q", jsonOf(t, cs), underWay)
	}
}

// TestACollectorDeleteStartsItsCascade: an object the collector deletes on its own finding
// (its owner is absent) is the root of a cascade that counts that delete, whether the
// delete's event comes before the object's removal or after it (a trial saw the first
// order give a cascade of one with no action, counted as a single deletion).
func TestACollectorDeleteStartsItsCascade(t *testing.T) {
	e := newSynth(1<<16, 18)
	s := openStore(t, Options{})
	record(t, s, e, quick())
	ghost := types.UID("ghost-owner")
	orphans := make([]gc.ObjectRef, 2)
	for i := range orphans {
		n := gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: fmt.Sprintf("orphan-%d", i), UID: e.uid()},
			Observed: true, Owners: []gc.OwnerRef{{APIVersion: "apps/v1", Kind: "Deployment", Name: "gone", UID: ghost}}}
		e.observe(&n)
		orphans[i] = n.ObjectRef
	}
	del := func(o gc.ObjectRef) {
		e.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: o, Policy: "Background", Reason: "all its owners are gone"})
	}
	del(orphans[0]) // the delete's event first
	e.remove(orphans[0], []types.UID{ghost})
	e.remove(orphans[1], []types.UID{ghost}) // the removal first
	del(orphans[1])
	waitRecorded(t, s, e.feed.LastSeq())
	for _, o := range orphans {
		cs := waitCascades(t, s, CascadeQuery{UID: string(o.UID)}, func(cs []Cascade) bool { return len(cs) > 0 && cs[0].End != nil })
		if len(cs) != 1 || cs[0].Root != o || cs[0].Policy != policyBackground || cs[0].Objects != 1 || cs[0].Deleted != 1 || cs[0].Actions != 1 {
			t.Fatalf("%s: %s; want one Background cascade rooted at it, deleted, with the collector's delete", o.Name, jsonOf(t, cs))
		}
	}
}

// TestANamespaceDeletionIsOneCascade: the namespace controller deletes a namespace's
// content; each object of it going joins the namespace's cascade, which ends once the
// namespace itself is gone.
func TestANamespaceDeletionIsOneCascade(t *testing.T) {
	e := newSynth(1<<16, 17)
	s := openStore(t, Options{})
	record(t, s, e, quick())
	ns := gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "shop", UID: e.uid()}, Observed: true}
	e.observe(&ns)
	var content []gc.NodeState
	for i := range 3 {
		c := gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: fmt.Sprintf("c%d", i), UID: e.uid()}, Observed: true}
		e.observe(&c)
		content = append(content, c)
	}
	other := gc.NodeState{ObjectRef: gc.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "elsewhere", Name: "x", UID: e.uid()}, Observed: true}
	e.observe(&other)
	now := time.Now().UTC()
	ns.BeingDeleted, ns.DeletionTimestamp = true, &now
	e.publish(gc.Event{Type: gc.NodeUpdated, Node: &ns})
	for _, c := range content {
		e.remove(c.ObjectRef, nil)
	}
	e.remove(other.ObjectRef, nil) // another namespace's: a cascade of its own
	waitRecorded(t, s, e.feed.LastSeq())
	open := waitCascades(t, s, CascadeQuery{}, func(cs []Cascade) bool { return len(cs) == 2 })
	for _, c := range open {
		if c.Root == ns.ObjectRef && (c.End != nil || c.Objects != 4 || c.Deleted != 3) {
			t.Errorf("while the namespace stays: %s; want it open, 4 objects, 3 deleted", jsonOf(t, c))
		}
	}
	e.remove(ns.ObjectRef, nil)
	cs := waitCascades(t, s, CascadeQuery{}, func(cs []Cascade) bool {
		return len(cs) == 2 && cs[0].End != nil && cs[1].End != nil
	})
	i := slices.IndexFunc(cs, func(c Cascade) bool { return c.Root == ns.ObjectRef })
	if i < 0 || cs[i].Objects != 4 || cs[i].Deleted != 4 || cs[i].Policy != policyBackground {
		t.Fatalf("cascades: %s; want the namespace's, 4 objects all deleted, and the other ConfigMap's", jsonOf(t, cs))
	}
}

// TestACascadeCountsWhatStaysApart: a cascade is counted as every place counts it
// (Cascade.Count, cascades.js's tally): its members, the root included; of those that do
// not stay, how many are gone; those that stay (kept by the collector, or orphaned) apart.
// A Foreground cascade of an owner and 3 dependents, one of which the collector keeps, reads
// "1 of 4 gone" half done (the kept one not yet decided), then "3 of 3 gone · 1 kept"; an
// Orphan delete of an owner with 4 dependents, "1 of 1 gone · 4 orphaned" (before, the
// recording said 5 objects, 1 deleted, and nothing of what stayed).
func TestACascadeCountsWhatStaysApart(t *testing.T) {
	e := newSynth(4096, 12)
	s := openStore(t, Options{})
	record(t, s, e, quick())
	fg := e.grow(3)
	orphaned := e.grow(4)
	waitRecorded(t, s, e.feed.LastSeq())
	count := func(c Cascade) [3]int {
		gone, of, kept := c.Count()
		return [3]int{gone, of, kept}
	}

	owner := e.waitForDependents(fg.owner)
	for _, d := range fg.deps {
		e.queue(gc.AttemptToDelete, gc.QueueAdded, d, "", 0, 0)
	}
	e.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: fg.deps[0], Policy: "Background", Reason: "its owner is deleting in the foreground"})
	e.remove(fg.deps[0], []types.UID{fg.owner.UID})
	waitRecorded(t, s, e.feed.LastSeq())
	cs := waitCascades(t, s, CascadeQuery{UID: string(fg.owner.UID)}, func(cs []Cascade) bool { return len(cs) == 1 && cs[0].Deleted == 1 })
	if got, want := count(cs[0]), [3]int{1, 4, 0}; got != want {
		t.Errorf("the Foreground cascade half done: %s, counted %v; want %v (1 of 4 gone)", jsonOf(t, cs[0]), got, want)
	}
	e.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbKeep, Object: fg.deps[1], Reason: "another owner holds it"})
	e.action(gc.Action{Queue: gc.AttemptToDelete, Verb: gc.VerbDelete, Object: fg.deps[2], Policy: "Background", Reason: "its owner is deleting in the foreground"})
	e.remove(fg.deps[2], []types.UID{fg.owner.UID})
	e.finishForeground(owner)
	waitRecorded(t, s, e.feed.LastSeq())
	cs = waitCascades(t, s, CascadeQuery{UID: string(fg.owner.UID)}, func(cs []Cascade) bool { return len(cs) == 1 && cs[0].End != nil })
	if got, want := count(cs[0]), [3]int{3, 3, 1}; got != want || cs[0].Objects != 4 {
		t.Errorf("the Foreground cascade: %s, counted %v; want %v (3 of 3 gone · 1 kept)", jsonOf(t, cs[0]), got, want)
	}

	e.mu.Lock()
	n, _ := e.rep.Node(orphaned.owner.UID)
	e.mu.Unlock()
	n.BeingDeleted, n.Finalizers = true, []string{"orphan"}
	e.publish(gc.Event{Type: gc.NodeUpdated, Node: &n})
	for _, d := range orphaned.deps {
		e.action(gc.Action{Queue: gc.AttemptToOrphan, Verb: gc.VerbOrphan, Object: d, Refs: []types.UID{orphaned.owner.UID}, Reason: "its owner is deleted with the orphan policy"})
		e.mu.Lock()
		dn, _ := e.rep.Node(d.UID)
		e.mu.Unlock()
		dn.Owners = nil
		e.publish(gc.Event{Type: gc.NodeUpdated, Node: &dn})
	}
	e.remove(orphaned.owner, nil)
	waitRecorded(t, s, e.feed.LastSeq())
	cs = waitCascades(t, s, CascadeQuery{UID: string(orphaned.owner.UID)}, func(cs []Cascade) bool { return len(cs) == 1 && cs[0].End != nil })
	if got, want := count(cs[0]), [3]int{1, 1, 4}; got != want {
		t.Errorf("the Orphan cascade: %s, counted %v; want %v (1 of 1 gone · 4 orphaned)", jsonOf(t, cs[0]), got, want)
	}
}
