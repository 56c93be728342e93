package gc

import (
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPredictDeleteSet: objects deleted together are predicted as the collector acts on
// them together, not as each alone: a ConfigMap two Deployments own stays when one goes
// and goes when both do; under Orphan, a target's dependent that is itself a target is
// deleted, not orphaned; a uid the graph lacks is said missing; one target predicts what
// PredictDelete does.
func TestPredictDeleteSet(t *testing.T) {
	h := newEngineHarness(t, Options{})
	a := deployment("shop", "a", "uid-a")
	b := deployment("shop", "b", "uid-b")
	rsA := replicaSet("shop", "a-1", "uid-rs-a", owned(ownerRefTo(a, blocking, controls)))
	podA := pod("shop", "a-1-x", "uid-pod-a", owned(ownerRefTo(rsA, blocking, controls)))
	shared := configMap("shop", "shared", "uid-shared", owned(ownerRefTo(a), ownerRefTo(b)))
	h.observe(evAdd(a), evAdd(b), evAdd(rsA), evAdd(podA), evAdd(shared))
	uids := func(l []PredictedObject) []types.UID {
		var out []types.UID
		for _, p := range l {
			out = append(out, p.Object.UID)
		}
		slices.Sort(out)
		return out
	}

	one, ok := h.gc.PredictDelete("uid-a", metav1.DeletePropagationBackground)
	if !ok || !slices.Equal(uids(one.Deleted), []types.UID{"uid-a", "uid-pod-a", "uid-rs-a"}) || !slices.Equal(uids(one.Kept), []types.UID{"uid-shared"}) || one.Targets != nil {
		t.Errorf("a alone: deleted %v, kept %v, targets %v; want a, its ReplicaSet and Pod, shared kept by b, no target list", uids(one.Deleted), uids(one.Kept), one.Targets)
	}
	set, missing := h.gc.PredictDeleteSet([]types.UID{"uid-a", "uid-b", "uid-gone", "uid-a"}, metav1.DeletePropagationBackground)
	if !slices.Equal(uids(set.Deleted), []types.UID{"uid-a", "uid-b", "uid-pod-a", "uid-rs-a", "uid-shared"}) || len(set.Kept) != 0 {
		t.Errorf("a and b together: deleted %v, kept %v; want shared deleted with them", uids(set.Deleted), uids(set.Kept))
	}
	if !slices.Equal(missing, []types.UID{"uid-gone"}) || len(set.Targets) != 2 || set.Target.UID != "uid-a" {
		t.Errorf("missing %v, targets %v (target %s); want uid-gone missing, a and b the targets once each", missing, set.Targets, set.Target.UID)
	}
	orphan, _ := h.gc.PredictDeleteSet([]types.UID{"uid-a", "uid-rs-a"}, metav1.DeletePropagationOrphan)
	if !slices.Equal(uids(orphan.Deleted), []types.UID{"uid-a", "uid-rs-a"}) || !slices.Equal(uids(orphan.Orphaned), []types.UID{"uid-pod-a", "uid-shared"}) {
		t.Errorf("orphan a and its ReplicaSet: deleted %v, orphaned %v; want the two deleted, the Pod and shared orphaned", uids(orphan.Deleted), uids(orphan.Orphaned))
	}
	fg, _ := h.gc.PredictDeleteSet([]types.UID{"uid-a", "uid-b"}, metav1.DeletePropagationForeground)
	steps := map[types.UID]int{}
	for _, d := range fg.Deleted {
		steps[d.Object.UID] = d.Step
	}
	if steps["uid-pod-a"] != 1 || steps["uid-rs-a"] != 2 || steps["uid-a"] != 3 || steps["uid-b"] < 1 {
		t.Errorf("foreground steps %v: want the Pod, then its ReplicaSet, then a", steps)
	}
	if _, missing := h.gc.PredictDeleteSet([]types.UID{"uid-gone"}, metav1.DeletePropagationBackground); len(missing) != 1 {
		t.Errorf("only a missing uid: missing %v", missing)
	}
}

// TestPredictUnblocksAForegroundDeletion: an owner whose foreground deletion waits only
// for objects that go goes too, once they are gone, whatever the policy (the prediction
// check found it: a held blocker deleted, its waiting owner went, predicted untouched);
// one that also waits for an object that stays does not.
func TestPredictUnblocksAForegroundDeletion(t *testing.T) {
	h := newEngineHarness(t, Options{})
	owner := configMap("shop", "owner", "uid-owner", deleting(), finalized(metav1.FinalizerDeleteDependents))
	blocker := configMap("shop", "blocker", "uid-blocker", deleting(), finalized("example.com/hold"), owned(ownerRefTo(owner, blocking)))
	top := configMap("shop", "top", "uid-top", deleting(), finalized(metav1.FinalizerDeleteDependents), owned())
	waiter := configMap("shop", "waiter", "uid-waiter", deleting(), finalized(metav1.FinalizerDeleteDependents), owned(ownerRefTo(top, blocking)))
	owner.OwnerReferences = []metav1.OwnerReference{ownerRefTo(top, blocking)}
	stays := configMap("shop", "stays", "uid-stays")
	other := configMap("shop", "other", "uid-other", deleting(), finalized(metav1.FinalizerDeleteDependents))
	both := configMap("shop", "both", "uid-both", deleting(), finalized("example.com/hold"), owned(ownerRefTo(other, blocking)))
	staying := configMap("shop", "staying", "uid-staying", owned(ownerRefTo(other, blocking), ownerRefTo(stays)))
	h.observe(evAdd(top), evAdd(owner), evAdd(blocker), evAdd(waiter), evAdd(stays), evAdd(other), evAdd(both), evAdd(staying))
	uids := func(l []PredictedObject) []types.UID {
		var out []types.UID
		for _, p := range l {
			out = append(out, p.Object.UID)
		}
		slices.Sort(out)
		return out
	}
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan} {
		p, _ := h.gc.PredictDelete("uid-blocker", policy)
		// top waits for owner and waiter: waiter (and so top) stays.
		if want := []types.UID{"uid-blocker", "uid-owner"}; !slices.Equal(uids(p.Deleted), want) {
			t.Errorf("%s: deleted %v, want %v", policy, uids(p.Deleted), want)
		}
		p, _ = h.gc.PredictDelete("uid-both", policy)
		if want := []types.UID{"uid-both"}; !slices.Equal(uids(p.Deleted), want) {
			t.Errorf("%s: deleted %v, want %v (other still waits for staying)", policy, uids(p.Deleted), want)
		}
	}
	fg, _ := h.gc.PredictDeleteSet([]types.UID{"uid-blocker", "uid-waiter"}, metav1.DeletePropagationForeground)
	steps := map[types.UID]int{}
	for _, d := range fg.Deleted {
		steps[d.Object.UID] = d.Step
	}
	if want := map[types.UID]int{"uid-blocker": 1, "uid-waiter": 1, "uid-owner": 2, "uid-top": 3}; !maps.Equal(steps, want) {
		t.Errorf("blocker and waiter in the foreground: steps %v, want %v", steps, want)
	}
}

// TestPredictForegroundThatNeverFinishesWaits: a foreground deletion waits for every
// blocking dependent that keeps its reference, and some never let go (the prediction check
// found each: predicted deleted, it stayed with foregroundDeletion): the object itself,
// when it names itself as a blocking owner; a cluster-scoped dependent naming it, which the
// collector never acts on; a dependent another owner keeps that is being deleted, held by
// its own finalizer. Each such object waits, held by foregroundDeletion, and a target
// waiting on it says so; in the background none of that holds anything.
func TestPredictForegroundThatNeverFinishesWaits(t *testing.T) {
	h := newEngineHarness(t, Options{})
	self := configMap("shop", "self", "uid-self")
	self.OwnerReferences = []metav1.OwnerReference{ownerRefTo(self, blocking)}
	top := configMap("shop", "top", "uid-top")
	mid := configMap("shop", "mid", "uid-mid", owned(ownerRefTo(top, blocking)))
	self2 := configMap("shop", "self2", "uid-self2", owned(ownerRefTo(mid, blocking)))
	self2.OwnerReferences = append(self2.OwnerReferences, ownerRefTo(self2, blocking))
	named := configMap("shop", "named", "uid-named")
	pv := testObject("v1", "PersistentVolume", "", "pv", "uid-pv", owned(ownerRefTo(named, blocking)))
	solid := configMap("shop", "solid", "uid-solid")
	waits := configMap("shop", "waits", "uid-waits")
	held := configMap("shop", "held", "uid-held", deleting(), finalized("example.com/hold"), owned(ownerRefTo(waits, blocking), ownerRefTo(solid)))
	h.observe(evAdd(self), evAdd(top), evAdd(mid), evAdd(self2), evAdd(named), evAdd(pv), evAdd(solid), evAdd(waits), evAdd(held))
	waiting := func(p Prediction) map[types.UID][]string {
		out := map[types.UID][]string{}
		for _, w := range p.Waiting {
			out[w.Object.UID] = w.Finalizers
		}
		return out
	}
	fg := []string{metav1.FinalizerDeleteDependents}
	for _, c := range []struct {
		targets  []types.UID
		waiting  map[types.UID][]string
		waitsFor []types.UID
	}{
		{[]types.UID{"uid-self"}, map[types.UID][]string{"uid-self": fg}, nil},
		// self2 names itself: it goes only as a target (as a dependent, it holds itself).
		{[]types.UID{"uid-top", "uid-self2"}, map[types.UID][]string{"uid-self2": fg}, []types.UID{"uid-self2"}},
		{[]types.UID{"uid-named"}, map[types.UID][]string{"uid-named": fg}, nil},
		{[]types.UID{"uid-waits"}, map[types.UID][]string{"uid-waits": fg}, nil},
	} {
		p, _ := h.gc.PredictDeleteSet(c.targets, metav1.DeletePropagationForeground)
		var waitsFor []types.UID
		for _, w := range p.TargetWaitsFor {
			waitsFor = append(waitsFor, w.Object.UID)
		}
		if got := waiting(p); !maps.EqualFunc(got, c.waiting, slices.Equal) || !slices.Equal(waitsFor, c.waitsFor) {
			t.Errorf("%v in the foreground: waiting %v, targets wait for %v; want %v, %v", c.targets, got, waitsFor, c.waiting, c.waitsFor)
		}
		if p, _ := h.gc.PredictDeleteSet(c.targets, metav1.DeletePropagationBackground); len(p.Waiting) > 0 {
			t.Errorf("%v in the background: waiting %v, want none", c.targets, waiting(p))
		}
	}
}

// TestPredictOrderOnlyWhenSure: a foreground deletion's steps are claimed only when every
// owner surely waits for its blocking dependents. Not when a target also goes with an
// owner it does not block (the collector may delete it in the background first: the
// prediction check saw a dependent go after such a target, seed 70), nor when a blocking
// dependent has another owner that goes (decided while that one still stands, it drops
// its reference to the owner that waits).
func TestPredictOrderOnlyWhenSure(t *testing.T) {
	h := newEngineHarness(t, Options{})
	a := configMap("shop", "a", "uid-a")
	b := configMap("shop", "b", "uid-b", owned(ownerRefTo(a)))
	c := configMap("shop", "c", "uid-c", owned(ownerRefTo(b, blocking)))
	x := configMap("shop", "x", "uid-x")
	y1 := configMap("shop", "y1", "uid-y1", owned(ownerRefTo(x, blocking)))
	y2 := configMap("shop", "y2", "uid-y2", owned(ownerRefTo(x, blocking)))
	z := configMap("shop", "z", "uid-z", owned(ownerRefTo(y1, blocking), ownerRefTo(y2, blocking)))
	h.observe(evAdd(a), evAdd(b), evAdd(c), evAdd(x), evAdd(y1), evAdd(y2), evAdd(z))
	steps := func(targets ...types.UID) map[types.UID]int {
		p, _ := h.gc.PredictDeleteSet(targets, metav1.DeletePropagationForeground)
		out := map[types.UID]int{}
		for _, d := range p.Deleted {
			if d.Step > 0 {
				out[d.Object.UID] = d.Step
			}
		}
		if (len(out) > 0) != (p.Order != "") {
			t.Errorf("%v: steps %v with order %q", targets, out, p.Order)
		}
		return out
	}
	if got, want := steps("uid-b"), map[types.UID]int{"uid-c": 1, "uid-b": 2}; !maps.Equal(got, want) {
		t.Errorf("b alone: steps %v, want %v", got, want)
	}
	if got := steps("uid-a", "uid-b"); len(got) > 0 {
		t.Errorf("a and b: steps %v, want none (b may go in the background, with a)", got)
	}
	if got := steps("uid-x"); len(got) > 0 {
		t.Errorf("x: steps %v, want none (z has two owners that go)", got)
	}
	if got, want := steps("uid-y1"), map[types.UID]int{"uid-y1": 1}; !maps.Equal(got, want) {
		t.Errorf("y1 alone: steps %v, want %v (z stays: y2 holds it)", got, want)
	}
}

// TestPredictOwnerBeingDeletedStillHolds: an owner being deleted but held by its own
// finalizers still holds its dependents (the collector takes it for solid until it is
// gone: the prediction check saw such a dependent stay, predicted deleted, seed 310); one
// whose foreground deletion is under way does not (it waits for its dependents to go).
func TestPredictOwnerBeingDeletedStillHolds(t *testing.T) {
	h := newEngineHarness(t, Options{})
	target := configMap("shop", "target", "uid-target")
	held := configMap("shop", "held", "uid-held", deleting(), finalized("example.com/hold"))
	fg := configMap("shop", "fg", "uid-fg", deleting(), finalized(metav1.FinalizerDeleteDependents))
	a := configMap("shop", "a", "uid-a", owned(ownerRefTo(target), ownerRefTo(held, blocking)))
	b := configMap("shop", "b", "uid-b", owned(ownerRefTo(target), ownerRefTo(fg)))
	h.observe(evAdd(target), evAdd(held), evAdd(fg), evAdd(a), evAdd(b))
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
		p, _ := h.gc.PredictDelete("uid-target", policy)
		var deleted, kept []types.UID
		for _, d := range p.Deleted {
			deleted = append(deleted, d.Object.UID)
		}
		for _, k := range p.Kept {
			kept = append(kept, k.Object.UID)
		}
		slices.Sort(deleted)
		if !slices.Equal(deleted, []types.UID{"uid-b", "uid-target"}) || !slices.Equal(kept, []types.UID{"uid-a"}) {
			t.Errorf("%s: deleted %v, kept %v; want b and the target deleted, a kept by held", policy, deleted, kept)
		}
	}
}

// TestPredictObjectBeingDeletedDoesNotHoldItself: an object being deleted that names
// itself goes with its owners (its own deletion, held by its finalizer, holds nothing),
// and a Foreground owner waits for it as for any held blocker (seed 466 of the prediction
// check).
func TestPredictObjectBeingDeletedDoesNotHoldItself(t *testing.T) {
	h := newEngineHarness(t, Options{})
	owner := configMap("shop", "owner", "uid-owner")
	self := configMap("shop", "self", "uid-self", deleting(), finalized("example.com/hold"), owned(ownerRefTo(owner, blocking)))
	self.OwnerReferences = append(self.OwnerReferences, ownerRefTo(self, blocking))
	h.observe(evAdd(owner), evAdd(self))
	p, _ := h.gc.PredictDelete("uid-owner", metav1.DeletePropagationForeground)
	var deleted, waitsFor []types.UID
	for _, d := range p.Deleted {
		deleted = append(deleted, d.Object.UID)
	}
	for _, w := range p.TargetWaitsFor {
		waitsFor = append(waitsFor, w.Object.UID)
	}
	if !slices.Equal(deleted, []types.UID{"uid-owner", "uid-self"}) || len(p.Kept) != 0 || !slices.Equal(waitsFor, []types.UID{"uid-self"}) {
		t.Errorf("deleted %v, kept %d, the target waits for %v; want owner and self deleted, the target waiting for self", deleted, len(p.Kept), waitsFor)
	}
}

// TestPredictClusterScopedNamingANamespacedKindStays: a cluster-scoped object naming an
// owner of a namespaced kind is never collected, whether that owner is in the graph or not
// (the collector goes by the reference's kind: the prediction check saw one naming an owner
// that never existed, and one naming a deleted ConfigMap, stay; seeds 703, 878, 901).
func TestPredictClusterScopedNamingANamespacedKindStays(t *testing.T) {
	h := newEngineHarness(t, Options{})
	owner := testObject("v1", "PersistentVolume", "", "owner", "uid-owner")
	ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "uid-ghost"}
	pv := testObject("v1", "PersistentVolume", "", "pv", "uid-pv", owned(ownerRefTo(owner, blocking), ghost))
	h.observe(evAdd(owner), evAdd(pv))
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
		p, _ := h.gc.PredictDelete("uid-owner", policy)
		if len(p.Deleted) != 1 || len(p.Kept) != 1 || p.Kept[0].Object.UID != "uid-pv" {
			t.Errorf("%s: deleted %d, kept %v; want the owner alone deleted, pv kept", policy, len(p.Deleted), p.Kept)
		}
	}
	if p, _ := h.gc.PredictDelete("uid-owner", metav1.DeletePropagationForeground); len(p.Waiting) != 1 {
		t.Errorf("foreground: waiting %v; want the owner, waiting for pv for good", p.Waiting)
	}
}
