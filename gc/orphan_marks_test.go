package gc

import (
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Orphan marks over the fake apiserver, on a clock the tests move. The embedded
// apiserver's version of the orphaning is TestOrphanDeleteMarksTheDependent
// (integration_orphan_marks_test.go).

// testClock is a clock the test moves by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)}
}

// marksOf are the marks the graph's node of uid carries, as a snapshot shows them.
func (h *engineHarness) marksOf(uid types.UID) []OrphanMark {
	h.t.Helper()
	n, ok := h.gc.Node(uid)
	if !ok {
		h.t.Fatalf("no node %s", uid)
	}
	return n.Orphaned
}

// nodeUpdates are the nodeUpdated events of uid published after seq.
func (h *engineHarness) nodeUpdates(seq uint64, uid types.UID) []NodeState {
	h.t.Helper()
	evs, err := h.gc.feed.Since(seq, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []NodeState
	for _, e := range evs {
		if e.Type == NodeUpdated && e.Node.UID == uid {
			out = append(out, *e.Node)
		}
	}
	return out
}

func TestOrphaningMarksTheDependentForADay(t *testing.T) {
	clock := newTestClock()
	owner := replicaSet("a", "search-5d4", "uid-o", deleting(), finalized(metav1.FinalizerOrphanDependents))
	p1 := pod("a", "p1", "uid-p1", owned(ownerRefTo(owner, blocking, controls)))
	h := newEngineHarness(t, Options{Now: clock.Now}, owner, p1)
	h.observe(evAdd(owner), evAdd(p1))
	seq := h.gc.feed.LastSeq()

	h.gc.processAttemptToOrphanWorker(h.ctx)

	want := OrphanMark{
		Owner:      ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "a", Name: "search-5d4", UID: "uid-o"},
		Controller: true, Cause: OrphanDelete, By: byEngine, At: clock.Now(),
		Reason: "the Orphan delete of ReplicaSet search-5d4 (its dependents stay, without their reference to it)",
	}
	if got := h.marksOf("uid-p1"); len(got) != 1 || got[0] != want {
		t.Fatalf("p1's marks = %+v, want %+v", got, want)
	}
	// The informer's update of p1 may come before or after the worker's mark: the mark is
	// published on its own, so a reader of the feed has it either way.
	ups := h.nodeUpdates(seq, "uid-p1")
	if len(ups) != 1 || len(ups[0].Orphaned) != 1 || ups[0].Orphaned[0] != want {
		t.Errorf("nodeUpdated events of p1 = %+v, want one carrying the mark", ups)
	}
	if got := want.Sentence(); got != "its controller reference to ReplicaSet search-5d4 was removed by "+byEngine+": "+want.Reason {
		t.Errorf("sentence = %q", got)
	}
	// The owner itself carries none.
	if got := h.marksOf("uid-o"); len(got) != 0 {
		t.Errorf("owner's marks = %+v, want none", got)
	}

	// The informer's update (the reference gone) keeps the mark.
	h.observe(evUpdate(p1, changed(p1, owned())))
	if got := h.marksOf("uid-p1"); len(got) != 1 {
		t.Errorf("after the informer's update, marks = %+v, want the mark kept", got)
	}

	// Just under a day: kept.
	clock.Add(OrphanMarkTTL - time.Second)
	if n := h.gc.expireOrphanMarks(); n != 0 || len(h.marksOf("uid-p1")) != 1 {
		t.Errorf("at 24h less a second: expired %d, marks %+v; want it kept", n, h.marksOf("uid-p1"))
	}
	// A day old: dropped, and the node published without it.
	clock.Add(time.Second)
	seq = h.gc.feed.LastSeq()
	if n := h.gc.expireOrphanMarks(); n != 1 {
		t.Errorf("at 24h: expired %d marks, want 1", n)
	}
	if got := h.marksOf("uid-p1"); len(got) != 0 {
		t.Errorf("at 24h: marks = %+v, want none", got)
	}
	if ups := h.nodeUpdates(seq, "uid-p1"); len(ups) != 1 || len(ups[0].Orphaned) != 0 {
		t.Errorf("nodeUpdated events after expiry = %+v, want one without marks", ups)
	}
	if len(h.gc.graph.marked) != 0 {
		t.Errorf("graph.marked = %v, want it empty once no node has a mark", h.gc.graph.marked)
	}
}

func TestRemovingReferencesMarksWhyEachWent(t *testing.T) {
	clock := newTestClock()
	keeper := configMap("a", "keeper", "uid-keep")
	waiter := deployment("a", "waiter", "uid-wait", deleting(), finalized(metav1.FinalizerDeleteDependents))
	gone := configMap("a", "gone", "uid-gone") // never stored: the apiserver says 404
	dep := configMap("a", "dep", "uid-dep", owned(ownerRefTo(keeper), ownerRefTo(waiter, blocking), ownerRefTo(gone)))
	h := newEngineHarness(t, Options{Now: clock.Now}, keeper, waiter, dep)
	h.observe(evAdd(keeper), evAdd(waiter), evAdd(dep))
	h.runUntilIdle()

	got := map[types.UID]OrphanMark{}
	for _, m := range h.marksOf("uid-dep") {
		got[m.Owner.UID] = m
	}
	if len(got) != 2 {
		t.Fatalf("dep's marks = %+v, want one for the absent owner and one for the waiting one", h.marksOf("uid-dep"))
	}
	if m := got["uid-gone"]; m.Cause != OwnerAbsent || m.Owner.Namespace != "a" || m.Owner.Name != "gone" || !m.At.Equal(clock.Now()) {
		t.Errorf("absent owner's mark = %+v", m)
	}
	if m := got["uid-wait"]; m.Cause != OwnerDeletingDependents || m.Owner.Kind != "Deployment" {
		t.Errorf("waiting owner's mark = %+v", m)
	}
	if _, ok := got["uid-keep"]; ok {
		t.Errorf("the solid owner is marked: %+v", got["uid-keep"])
	}
}

func TestDismissOrphanMarks(t *testing.T) {
	owner := configMap("a", "owner", "uid-o", deleting(), finalized(metav1.FinalizerOrphanDependents))
	p1 := pod("a", "p1", "uid-p1", owned(ownerRefTo(owner)))
	h := newEngineHarness(t, Options{}, owner, p1)
	h.observe(evAdd(owner), evAdd(p1))
	h.gc.processAttemptToOrphanWorker(h.ctx)
	if len(h.marksOf("uid-p1")) != 1 {
		t.Fatalf("no mark to dismiss: %+v", h.marksOf("uid-p1"))
	}
	seq := h.gc.feed.LastSeq()
	if found, n := h.gc.DismissOrphanMarks("uid-p1"); !found || n != 1 {
		t.Errorf("DismissOrphanMarks = %v, %d; want true, 1", found, n)
	}
	if got := h.marksOf("uid-p1"); len(got) != 0 {
		t.Errorf("marks after dismissal = %+v", got)
	}
	if ups := h.nodeUpdates(seq, "uid-p1"); len(ups) != 1 || len(ups[0].Orphaned) != 0 {
		t.Errorf("nodeUpdated events after dismissal = %+v, want one without marks", ups)
	}
	if found, n := h.gc.DismissOrphanMarks("uid-p1"); !found || n != 0 {
		t.Errorf("second DismissOrphanMarks = %v, %d; want true, 0", found, n)
	}
	if found, _ := h.gc.DismissOrphanMarks("uid-nothing"); found {
		t.Error("DismissOrphanMarks found a node that is not in the graph")
	}
}

func TestOrphanMarksAreBounded(t *testing.T) {
	h := newEngineHarness(t, Options{})
	dep := configMap("a", "dep", "uid-dep")
	h.observe(evAdd(dep))
	h.gc.graph.mu.Lock()
	n, _ := h.gc.graph.read("uid-dep")
	for i := range maxOrphanMarks + 3 {
		owner := ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: fmt.Sprint("o", i), UID: types.UID(fmt.Sprint("uid-o", i))}
		h.gc.builder.addOrphanMarks(n, []OrphanMark{newOrphanMark(owner, false, OwnerAbsent, byEngine, time.Unix(int64(i), 0))})
	}
	// The same former owner again replaces its mark rather than add one.
	again := ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "o5", UID: "uid-o5"}
	h.gc.builder.addOrphanMarks(n, []OrphanMark{newOrphanMark(again, false, OwnerAbsent, byEngine, time.Unix(100, 0))})
	h.gc.graph.mu.Unlock()

	got := h.marksOf("uid-dep")
	var names []string
	for _, m := range got {
		names = append(names, m.Owner.Name)
	}
	if want := "[o3 o4 o6 o7 o8 o9 o10 o5]"; fmt.Sprint(names) != want {
		t.Errorf("marks kept = %v, want the newest %d, newest last: %s", names, maxOrphanMarks, want)
	}
}

func TestShadowModeMarksWhatTheClusterCollectorDid(t *testing.T) {
	clock := newTestClock()
	owner := configMap("a", "owner", "uid-o", deleting(), finalized(metav1.FinalizerOrphanDependents))
	p1 := pod("a", "p1", "uid-p1", owned(ownerRefTo(owner, controls)))
	h := newEngineHarness(t, Options{Mode: ModeShadow, Now: clock.Now}, owner, p1)
	h.observe(evAdd(owner), evAdd(p1))
	h.gc.processAttemptToOrphanWorker(h.ctx) // decides, writes nothing
	if got := h.marksOf("uid-p1"); len(got) != 0 {
		t.Fatalf("shadow mode marked p1 before the cluster did anything: %+v", got)
	}
	// An unrelated update confirms nothing.
	labelled := changed(p1, func(o *metav1.PartialObjectMetadata) { o.Labels = map[string]string{"a": "b"} })
	h.observe(evUpdate(p1, labelled))
	if got := h.marksOf("uid-p1"); len(got) != 0 {
		t.Fatalf("marked on an update that kept the reference: %+v", got)
	}
	clock.Add(time.Minute)
	h.observe(evUpdate(labelled, changed(labelled, owned()))) // the cluster's collector orphans it
	got := h.marksOf("uid-p1")
	if len(got) != 1 || got[0].By != byCluster || got[0].Cause != OrphanDelete || got[0].Owner.UID != "uid-o" ||
		!got[0].Controller || !got[0].At.Equal(clock.Now()) {
		t.Errorf("marks = %+v, want the cluster's orphaning of the owner, at the observation", got)
	}
}

func TestNodeStateRedactsAHiddenFormerOwner(t *testing.T) {
	secret := ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "secret", Name: "hidden", UID: "uid-h"}
	shown := ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "shown", UID: "uid-s"}
	s := NodeState{ObjectRef: ObjectRef{Kind: "Pod", Namespace: "a", Name: "p", UID: "uid-p"}, Orphaned: []OrphanMark{
		newOrphanMark(secret, true, OrphanDelete, byEngine, time.Unix(1, 0)),
		newOrphanMark(shown, false, OwnerAbsent, byEngine, time.Unix(2, 0)),
	}}
	visible := func(r ObjectRef) bool { return r.Namespace != "secret" }
	out, changed := s.RedactedFor(visible)
	if !changed {
		t.Fatal("nothing redacted")
	}
	h := out.Orphaned[0]
	if !h.OwnerHidden || h.Owner != (ObjectRef{}) || h.Reason != "the Orphan delete of an object you may not see (its dependents stay, without their reference to it)" {
		t.Errorf("hidden owner's mark = %+v", h)
	}
	if h.Sentence() != "its controller reference to an owner you may not see was removed by "+byEngine+": "+h.Reason {
		t.Errorf("sentence = %q", h.Sentence())
	}
	if out.Orphaned[1] != s.Orphaned[1] {
		t.Errorf("visible owner's mark = %+v, want it unchanged", out.Orphaned[1])
	}
	if s.Orphaned[0].OwnerHidden {
		t.Error("RedactedFor changed its receiver's marks")
	}
}
